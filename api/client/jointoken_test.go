package client

import (
	"slices"
	"strings"
	"testing"
)

const testCore = "SKF1.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.abc123.abcdefghijklmnopqrstuvwxyz234567"

func TestJoinTokenServersRoundTrip(t *testing.T) {
	servers := []string{"https://10.0.0.1:7443", "https://srv-b.example:7443"}
	tok, err := JoinTokenWithServers(testCore, servers)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(tok, ".") != 4 || !strings.HasPrefix(tok, testCore+".") {
		t.Fatalf("JoinTokenWithServers = %q; want the core plus one field", tok)
	}
	core, got, err := SplitJoinToken(" " + tok + "\n")
	if err != nil || core != testCore || !slices.Equal(got, servers) {
		t.Fatalf("SplitJoinToken(%q) = %q, %q, %v; want %q, %q", tok, core, got, err, testCore, servers)
	}
	// An old token: unchanged, no list.
	core, got, err = SplitJoinToken(testCore)
	if err != nil || core != testCore || got != nil {
		t.Fatalf("SplitJoinToken(old token) = %q, %q, %v; want it unchanged, no servers", core, got, err)
	}
	// Re-listing replaces the list.
	again, err := JoinTokenWithServers(tok, servers[:1])
	if err != nil {
		t.Fatal(err)
	}
	if _, got, _ := SplitJoinToken(again); !slices.Equal(got, servers[:1]) {
		t.Fatalf("servers after re-listing = %q; want %q", got, servers[:1])
	}
}

func TestJoinTokenServersRejectsBadLists(t *testing.T) {
	for _, bad := range [][]string{
		{"http://10.0.0.1:7443"}, {"https://"}, {"https://u:p@h:1"}, {"https://h:1/path"}, {"https://h:1?x=y"},
		slices.Repeat([]string{"https://h:1"}, MaxJoinTokenServers+1),
	} {
		if _, err := JoinTokenWithServers(testCore, bad); err == nil {
			t.Errorf("JoinTokenWithServers(%q) = nil error; want a refusal", bad)
		}
	}
	for _, tail := range []string{"!!!", "aHR0cDovL3g"} { // not base64url; "http://x"
		if _, _, err := SplitJoinToken(testCore + "." + tail); err == nil || strings.Contains(err.Error(), testCore) {
			t.Errorf("SplitJoinToken(core.%s) = %v; want an error that does not quote the token", tail, err)
		}
	}
}

func TestMergeServers(t *testing.T) {
	got := MergeServers([]string{"https://a:1", "https://b:1"}, []string{"https://b:1", "https://c:1"})
	if want := []string{"https://a:1", "https://b:1", "https://c:1"}; !slices.Equal(got, want) {
		t.Errorf("MergeServers = %q; want %q", got, want)
	}
}

func FuzzSplitJoinToken(f *testing.F) {
	f.Add(testCore)
	f.Add(testCore + ".aHR0cHM6Ly9hOjE")
	f.Fuzz(func(t *testing.T, s string) {
		core, servers, err := SplitJoinToken(s)
		if err != nil {
			return
		}
		if len(servers) > 0 {
			if _, err := JoinTokenWithServers(core, servers); err != nil {
				t.Fatalf("a list SplitJoinToken accepted is refused by JoinTokenWithServers: %v", err)
			}
		}
	})
}
