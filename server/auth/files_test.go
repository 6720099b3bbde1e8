package auth_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
)

func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestEnsureAdminToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server", "admin.token")
	tok, err := auth.EnsureAdminToken(path)
	if err != nil {
		t.Fatalf("EnsureAdminToken (create): %v", err)
	}
	if !regexp.MustCompile(`^SKA1\.[0-9a-f]{64}$`).MatchString(tok) {
		t.Errorf("admin token %q; want SKA1.<64 hex>", tok)
	}
	if m := modeOf(t, path); m != 0o600 {
		t.Errorf("admin.token mode = %v; want 0600", m)
	}
	before, _ := os.ReadFile(path)
	again, err := auth.EnsureAdminToken(path)
	if err != nil || again != tok {
		t.Errorf("EnsureAdminToken (reuse) = %q, %v; want the same token", again, err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("EnsureAdminToken rewrote admin.token")
	}
	if _, err := auth.NewTokens(auth.Config{Store: newHarness(t).store, CAHash: caHash, AdminToken: tok}); err != nil {
		t.Errorf("NewTokens with the generated admin token: %v", err)
	}
}

func TestEnsureAdminTokenExistingFile(t *testing.T) {
	tests := []struct {
		content string
		want    string // "" for an error
	}{
		{"my-own-long-admin-token\n", "my-own-long-admin-token"},
		{"short\n", ""},
		{"  \n", ""},
		{"two words-that-are-long", ""},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "admin.token")
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := auth.EnsureAdminToken(path)
		if tt.want == "" {
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("EnsureAdminToken(%q) = %q, %v; want an error naming the file", tt.content, got, err)
			}
			if err != nil && strings.TrimSpace(tt.content) != "" && strings.Contains(err.Error(), strings.TrimSpace(tt.content)) {
				t.Errorf("EnsureAdminToken error %q quotes the file's content", err)
			}
		} else if got != tt.want || err != nil {
			t.Errorf("EnsureAdminToken(%q) = %q, %v; want %q", tt.content, got, err, tt.want)
		}
		if b, _ := os.ReadFile(path); string(b) != tt.content {
			t.Errorf("EnsureAdminToken(%q) changed the file", tt.content)
		}
	}
}

func TestEnsureDefaultJoinToken(t *testing.T) {
	h := newHarness(t)
	path := filepath.Join(t.TempDir(), "join.token")
	jt, err := h.tok.EnsureDefaultJoinToken(h.ctx, path)
	if err != nil {
		t.Fatalf("EnsureDefaultJoinToken (create): %v", err)
	}
	if m := modeOf(t, path); m != 0o600 {
		t.Errorf("join.token mode = %v; want 0600", m)
	}
	b, _ := os.ReadFile(path)
	if string(b) != jt.String()+"\n" || jt.CAHash != caHash {
		t.Errorf("join.token = %q; want the token for our CA", b)
	}

	again, err := h.tok.EnsureDefaultJoinToken(h.ctx, path)
	if err != nil || again != jt {
		t.Fatalf("EnsureDefaultJoinToken (reuse) = %v; want the same token", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(b) {
		t.Error("EnsureDefaultJoinToken rewrote join.token")
	}

	// The default token never expires.
	h.clk.Advance(10 * 365 * 24 * time.Hour)
	h.join(t, jt, "late-node")
	infos, err := h.tok.ListJoinTokens(h.ctx)
	if err != nil || len(infos) != 1 || !infos[0].Expires.IsZero() {
		t.Errorf("ListJoinTokens = %+v, %v; want one token that never expires", infos, err)
	}

	// Deleted from the store, it comes back from the file on the next start.
	if err := h.tok.DeleteJoinToken(h.ctx, jt.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := h.tok.EnsureDefaultJoinToken(h.ctx, path); err != nil || got != jt {
		t.Fatalf("EnsureDefaultJoinToken after delete = %v; want the file's token restored", err)
	}
	h.join(t, jt, "restored-node")
}

func TestEnsureDefaultJoinTokenNeverReplaces(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	mine, err := auth.NewJoinToken(caHash)
	if err != nil {
		t.Fatal(err)
	}
	foreign := mine
	foreign.CAHash = caHash2
	clash := mine
	clash.Secret = strings.Repeat("b", 32)

	tests := []struct {
		name    string
		content string
		setup   func()
		wantIs  error
	}{
		{"corrupt file", "SKF1.garbage-" + mine.Secret + "\n", nil, auth.ErrInvalidToken},
		{"other CA", foreign.String() + "\n", nil, auth.ErrWrongCA},
		{"stored token with another secret", clash.String() + "\n", func() {
			// mine is stored under the same id first.
			h.store.Put(secretFor(t, h, mine))
		}, nil},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if tt.setup != nil {
			tt.setup()
		}
		before := h.store.Names()
		_, err := h.tok.EnsureDefaultJoinToken(h.ctx, path)
		if err == nil || !strings.Contains(err.Error(), path) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
			t.Errorf("EnsureDefaultJoinToken(%s) = %v; want an error naming the file (is %v)", tt.name, err, tt.wantIs)
		}
		noSecretIn(t, "EnsureDefaultJoinToken("+tt.name+")", err, mine.Secret, clash.Secret)
		if b, _ := os.ReadFile(path); string(b) != tt.content {
			t.Errorf("EnsureDefaultJoinToken(%s) changed the file", tt.name)
		}
		if after := h.store.Names(); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Errorf("EnsureDefaultJoinToken(%s) changed the store: %v -> %v", tt.name, before, after)
		}
	}
	// The stored token is still the original.
	if _, err := h.tok.Join(h.ctx, mine.String(), "n1", ""); err != nil {
		t.Errorf("Join with the original stored token = %v; want success", err)
	}
}

// secretFor returns the Secret CreateJoinToken would store for jt, with no
// expiry, by having a scratch Tokens store it.
func secretFor(t *testing.T, h *harness, jt auth.JoinToken) *api.Secret {
	t.Helper()
	scratch := newHarness(t)
	path := filepath.Join(t.TempDir(), "join.token")
	if err := os.WriteFile(path, []byte(jt.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := scratch.tok.EnsureDefaultJoinToken(h.ctx, path); err != nil {
		t.Fatal(err)
	}
	s, err := scratch.store.GetSecret(h.ctx, auth.SystemNamespace, auth.JoinTokenSecretPrefix+jt.ID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
