package auth_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/server/auth"
)

// TestAuthenticateRevisionMode: with Config.Revision a cached credential
// needs no TTL, is re-read only when some Secret changed and the feed
// has not said which, and a credential deleted behind Tokens' back is
// refused on the very next request.
func TestAuthenticateRevisionMode(t *testing.T) {
	h := newHarness(t)
	var rev atomic.Int64
	rev.Store(10)
	tok, err := auth.NewTokens(auth.Config{Store: h.store, CAHash: caHash, Clock: h.clk, Revision: rev.Load})
	if err != nil {
		t.Fatal(err)
	}
	h.tok = tok
	jt := h.create(t, 0)
	cred1, cred2 := h.join(t, jt, "n1"), h.join(t, jt, "n2")
	tok.SecretsResync(rev.Load()) // the feed starts
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
	// Another Secret changes; until the feed says which, read again.
	rev.Add(1)
	reads("a Secret changed, feed behind", 1, func() { _ = auth1() })
	reads("re-cached at the new revision", 0, func() { _ = auth1() })
	rev.Add(1)
	tok.SecretChanged("default", "db-password", rev.Load())
	reads("feed caught up with another Secret's change", 0, func() { _ = auth1() })

	// n1's credential is deleted in the store, not through Tokens (the
	// API, another server): refused at once, before the feed tells.
	if err := h.store.DeleteSecret(h.ctx, auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n1"); err != nil {
		t.Fatal(err)
	}
	rev.Add(1)
	if err := auth1(); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("deleted credential, feed behind: %v; want ErrUnauthenticated", err)
	}
	tok.SecretChanged(auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n1", rev.Load())
	if err := auth1(); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("deleted credential, feed caught up: %v; want ErrUnauthenticated", err)
	}
	// n2, cached before, still needs no read once the feed caught up.
	reads("n2 first", 1, func() {
		if _, err := tok.Authenticate(h.ctx, cred2); err != nil {
			t.Fatal(err)
		}
	})
	reads("n2 cached", 0, func() { _, _ = tok.Authenticate(h.ctx, cred2) })
	tok.SecretsResync(rev.Load())
	reads("after a resync", 1, func() { _, _ = tok.Authenticate(h.ctx, cred2) })
}

// TestAuthenticateFeedForgetsChangedCredential: a cached entry whose
// revision is still current stays trusted only until the feed reports
// that very credential changing.
func TestAuthenticateFeedForgetsChangedCredential(t *testing.T) {
	h := newHarness(t)
	var rev atomic.Int64
	tok, err := auth.NewTokens(auth.Config{Store: h.store, CAHash: caHash, Clock: h.clk, Revision: rev.Load})
	if err != nil {
		t.Fatal(err)
	}
	h.tok = tok
	cred := h.join(t, h.create(t, 0), "n1")
	if _, err := tok.Authenticate(h.ctx, cred); err != nil {
		t.Fatal(err)
	}
	if err := h.store.DeleteSecret(h.ctx, auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n1"); err != nil {
		t.Fatal(err)
	}
	rev.Add(1)
	tok.SecretChanged(auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n1", rev.Load())
	if _, err := tok.Authenticate(h.ctx, cred); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Fatalf("after the feed reported the deletion: %v; want ErrUnauthenticated", err)
	}
}
