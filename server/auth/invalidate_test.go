package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
)

// TestAuthenticateInvalidatedMode: with Config.Invalidated a cached
// credential needs no TTL and is re-read only once its own Secret
// changed; a credential deleted behind Tokens' back and reported by
// SecretChanged is refused on the very next request.
func TestAuthenticateInvalidatedMode(t *testing.T) {
	h := newHarness(t)
	tok, err := auth.NewTokens(auth.Config{Store: h.store, CAHash: caHash, Clock: h.clk, Invalidated: true})
	if err != nil {
		t.Fatal(err)
	}
	h.tok = tok
	jt := h.create(t, 0)
	cred1, cred2 := h.join(t, jt, "n1"), h.join(t, jt, "n2")
	auth1 := func() error { _, err := tok.Authenticate(h.ctx, cred1); return err }
	reads := func(what string, want int, f func()) {
		t.Helper()
		before := h.store.Gets()
		f()
		if got := h.store.Gets() - before; got != want {
			t.Errorf("%s: %d store reads; want %d", what, got, want)
		}
	}
	reads("first", 1, func() {
		if err := auth1(); err != nil {
			t.Fatal(err)
		}
	})
	reads("an hour of requests", 0, func() {
		for range 60 {
			h.clk.Advance(time.Minute) // no TTL in this mode
			if err := auth1(); err != nil {
				t.Fatal(err)
			}
		}
	})
	// Other Secrets change, n2's credential among them: n1 stays cached.
	tok.SecretChanged("default", "db-password")
	tok.SecretChanged(auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n2")
	reads("other Secrets changed", 0, func() { _ = auth1() })

	// n1's credential is deleted in the store, not through Tokens (the
	// API, another server), and reported: refused at once.
	if err := h.store.DeleteSecret(h.ctx, auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n1"); err != nil {
		t.Fatal(err)
	}
	tok.SecretChanged(auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n1")
	if err := auth1(); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("deleted credential: %v; want ErrUnauthenticated", err)
	}
	reads("n2 first", 1, func() {
		if _, err := tok.Authenticate(h.ctx, cred2); err != nil {
			t.Fatal(err)
		}
	})
	reads("n2 cached", 0, func() { _, _ = tok.Authenticate(h.ctx, cred2) })
	tok.SecretsResync()
	reads("after a resync", 1, func() { _, _ = tok.Authenticate(h.ctx, cred2) })
}

// hookedStore tells Tokens of every write, as the server's store hook
// does: synchronously, before the writer returns.
type hookedStore struct {
	auth.SecretStore
	tok *auth.Tokens
}

func (s *hookedStore) CreateSecret(ctx context.Context, sec *api.Secret) error {
	err := s.SecretStore.CreateSecret(ctx, sec)
	if err == nil {
		s.tok.SecretChanged(sec.Namespace, sec.Name)
	}
	return err
}

func (s *hookedStore) DeleteSecret(ctx context.Context, namespace, name string) error {
	err := s.SecretStore.DeleteSecret(ctx, namespace, name)
	if err == nil {
		s.tok.SecretChanged(namespace, name)
	}
	return err
}

// TestJoinCachesNewCredential: with Config.Invalidated a node's first
// request after its join needs no store read, and the credential is
// still refused once deleted.
func TestJoinCachesNewCredential(t *testing.T) {
	h := newHarness(t)
	hs := &hookedStore{SecretStore: h.store}
	tok, err := auth.NewTokens(auth.Config{Store: hs, CAHash: caHash, Clock: h.clk, Invalidated: true})
	if err != nil {
		t.Fatal(err)
	}
	hs.tok, h.tok = tok, tok
	cred := h.join(t, h.create(t, 0), "n1")
	before := h.store.Gets()
	if _, err := tok.Authenticate(h.ctx, cred); err != nil {
		t.Fatal(err)
	}
	if got := h.store.Gets() - before; got != 0 {
		t.Errorf("the first request after the join read the store %d times; want 0", got)
	}
	if err := hs.DeleteSecret(h.ctx, auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Authenticate(h.ctx, cred); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("after deletion: %v; want ErrUnauthenticated", err)
	}
}
