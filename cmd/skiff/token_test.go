package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api/client"
)

func TestTokenGolden(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	h.names[tokenID(t, readTrim(t, h.info.JoinTokenPath))] = "<default-id>"
	h.golden("token-list-default", h.run("token", "list"))
	h.srvClk.Advance(time.Minute)
	create := h.run("token", "create", "--ttl", "2h", "--description", "rack 4")
	h.names[tokenID(t, create.stdout)] = "<id-1>"
	h.golden("token-create", create)
	h.srvClk.Advance(time.Minute)
	forever := h.run("token", "create", "--ttl", "0s")
	h.names[tokenID(t, forever.stdout)] = "<id-2>"
	h.golden("token-create-forever", forever)
	h.cliClk.Advance(30 * time.Minute)
	h.golden("token-list", h.run("token", "list"))

	tok := strings.TrimSpace(create.stdout)
	parts := strings.Split(tok, ".")
	if len(parts) != 4 || parts[0] != "SKF1" {
		t.Fatalf("token create printed %q; want SKF1.<hash>.<id>.<secret>", tok)
	}
	if !strings.Contains(create.stderr, "skiff agent --server "+h.info.URL+" --token "+tok) {
		t.Errorf("token create stderr %q lacks the agent command line", create.stderr)
	}
	del := h.run("token", "delete", parts[2])
	h.golden("token-delete", del)
	if r := h.run("token", "list"); strings.Contains(r.stdout, parts[2]) {
		t.Errorf("token %s still listed after delete:\n%s", parts[2], r.stdout)
	}
	h.golden("token-delete-missing", h.run("token", "delete", parts[2]))
	h.golden("token-bad-ttl", h.run("token", "create", "--ttl", "-1h"))
	h.golden("token-no-subcommand", h.run("token"))
	h.golden("token-unknown-subcommand", h.run("token", "rotate"))
}

// tokenID returns the ID part of a join token.
func tokenID(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(strings.TrimSpace(tok), ".")
	if len(parts) != 4 {
		t.Fatalf("%q is not a join token", tok)
	}
	return parts[2]
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestTokenCreateCarriesServers: --servers puts a server list in the
// printed token, which agents split off (client.SplitJoinToken); the
// server still accepts the token, list and all; a bad list is refused
// before any token is created.
func TestTokenCreateCarriesServers(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	servers := []string{"https://10.0.0.1:7443", h.info.URL}
	r := h.run("token", "create", "--servers", strings.Join(servers, ","))
	if r.code != 0 {
		t.Fatalf("token create --servers = %d %q", r.code, r.stderr)
	}
	tok := strings.TrimSpace(r.stdout)
	core, got, err := client.SplitJoinToken(tok)
	if err != nil || !slices.Equal(got, servers) || strings.Count(core, ".") != 3 {
		t.Fatalf("token %q carries %q, %v; want %q", tok, got, err, servers)
	}
	before := h.run("token", "list").stdout
	if bad := h.run("token", "create", "--servers", "http://plain:80"); bad.code == 0 || !strings.Contains(bad.stderr, "--servers") {
		t.Errorf("token create --servers http://... = %d %q; want a usage error", bad.code, bad.stderr)
	}
	if after := h.run("token", "list").stdout; after != before {
		t.Errorf("a refused --servers created a token:\n%s", after)
	}
}
