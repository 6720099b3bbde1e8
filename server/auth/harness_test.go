package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/server/auth/authtest"
)

var (
	t0      = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	caHash  = strings.Repeat("ab", 32)
	caHash2 = strings.Repeat("cd", 32)
	admin   = "SKA1." + strings.Repeat("0f", 32)
)

// harness is a Tokens over a MemSecretStore on a fake clock.
type harness struct {
	store *authtest.MemSecretStore
	clk   *clock.Fake
	tok   *auth.Tokens
	ctx   context.Context
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{store: &authtest.MemSecretStore{}, clk: clock.NewFake(t0), ctx: context.Background()}
	h.tok = h.newTokens(t, h.store)
	return h
}

func (h *harness) newTokens(t *testing.T, store auth.SecretStore) *auth.Tokens {
	t.Helper()
	tok, err := auth.NewTokens(auth.Config{Store: store, CAHash: caHash, AdminToken: admin, Clock: h.clk, CacheTTL: time.Minute})
	if err != nil {
		t.Fatalf("NewTokens: %v", err)
	}
	return tok
}

func (h *harness) create(t *testing.T, ttl time.Duration) auth.JoinToken {
	t.Helper()
	jt, err := h.tok.CreateJoinToken(h.ctx, ttl, "test")
	if err != nil {
		t.Fatalf("CreateJoinToken: %v", err)
	}
	return jt
}

func (h *harness) join(t *testing.T, jt auth.JoinToken, node string) string {
	t.Helper()
	cred, err := h.tok.Join(h.ctx, jt.String(), node, "")
	if err != nil {
		t.Fatalf("Join(%q): %v", node, err)
	}
	return cred
}

// noSecretIn fails when err's message contains any of secrets.
func noSecretIn(t *testing.T, what string, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q contains secret text %q", what, err, s)
		}
	}
}
