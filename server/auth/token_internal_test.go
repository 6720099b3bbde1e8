package auth

import (
	"strings"
	"testing"
)

func TestParseNodeCredential(t *testing.T) {
	hex64 := strings.Repeat("0a", 32)
	tests := []struct {
		in           string
		node, secret string
		ok           bool
	}{
		{"SKN1.node-a." + hex64, "node-a", hex64, true},
		{"SKN1.rack1.node-a.example." + hex64, "rack1.node-a.example", hex64, true},
		{"SKN1." + hex64, "", "", false},
		{"SKN1.." + hex64, "", "", false},
		{"SKN1.Node-A." + hex64, "", "", false},
		{"SKN1.node-a." + hex64[:63], "", "", false},
		{"SKN1.node-a." + strings.ToUpper(hex64), "", "", false},
		{"SKA1.node-a." + hex64, "", "", false},
		{"SKN1.node_a." + hex64, "", "", false},
		{"SKN1." + strings.Repeat("a", maxNodeNameLen+1) + "." + hex64, "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		node, secret, ok := parseNodeCredential(tt.in)
		if node != tt.node || secret != tt.secret || ok != tt.ok {
			t.Errorf("parseNodeCredential(%q) = %q, %q, %v; want %q, %q, %v", tt.in, node, secret, ok, tt.node, tt.secret, tt.ok)
		}
	}
}

func TestRandomIDCoversAlphabet(t *testing.T) {
	seen := map[rune]bool{}
	for range 400 {
		id, err := randomID()
		if err != nil {
			t.Fatal(err)
		}
		if !validTokenID(id) {
			t.Fatalf("randomID() = %q; want 6 of [a-z0-9]", id)
		}
		for _, r := range id {
			seen[r] = true
		}
	}
	// 2,400 draws from 36 characters miss one with probability ~1e-28.
	if len(seen) != len(idAlphabet) {
		t.Errorf("randomID used %d distinct characters; want all %d", len(seen), len(idAlphabet))
	}
}

func FuzzParseJoinToken(f *testing.F) {
	f.Add("SKF1." + strings.Repeat("ab", 32) + ".abc123.abcdefghijklmnopqrstuvwxyz234567")
	f.Add("SKF1....")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		jt, err := ParseJoinToken(s)
		if err != nil {
			if strings.Count(s, ".") == 3 && len(s) > 20 && strings.Contains(err.Error(), s) {
				t.Fatalf("error %q quotes the input", err)
			}
			return
		}
		if back, err := ParseJoinToken(jt.String()); err != nil || back != jt {
			t.Fatalf("ParseJoinToken(%q) round trip = %+v, %v; want %+v", jt.String(), back, err, jt)
		}
	})
}

func FuzzParseNodeCredential(f *testing.F) {
	f.Add("SKN1.node-a." + strings.Repeat("0a", 32))
	f.Add("SKN1.a.b.c")
	f.Fuzz(func(t *testing.T, s string) {
		node, secret, ok := parseNodeCredential(s)
		if !ok {
			return
		}
		if NodeCredentialPrefix+"."+node+"."+secret != s || validateNodeName(node) != nil {
			t.Fatalf("parseNodeCredential(%q) = %q, %q accepted something off-shape", s, node, secret)
		}
	})
}

// TestHashMatches checks the credential comparison against HashSecret,
// and that it allocates nothing.
func TestHashMatches(t *testing.T) {
	want := HashSecret("s3cret")
	for _, tc := range []struct {
		want, secret string
		ok           bool
	}{
		{want, "s3cret", true},
		{want, "s3creT", false},
		{want, "", false},
		{want[:63], "s3cret", false},
		{want + "0", "s3cret", false},
		{"", "s3cret", false},
		{strings.ToUpper(want), "s3cret", false}, // hex is lower case
	} {
		if got := hashMatches(tc.want, tc.secret); got != tc.ok {
			t.Errorf("hashMatches(%q, %q) = %v; want %v", tc.want, tc.secret, got, tc.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { hashMatches(want, "s3cret") }); n != 0 {
		t.Errorf("hashMatches allocates %v times; want 0", n)
	}
}
