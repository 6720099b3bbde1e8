package auth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/server/auth/authtest"
)

// listHook is a SecretStore whose ListSecrets runs during, once the list
// is read: a credential's change reported while a list is in flight.
type listHook struct {
	*authtest.MemSecretStore
	during func()
}

func (l *listHook) ListSecrets(ctx context.Context, ns, secretType string) ([]*api.Secret, error) {
	out, err := l.MemSecretStore.ListSecrets(ctx, ns, secretType)
	if l.during != nil {
		l.during()
	}
	return out, err
}

// TestWarmCachesNodeCredentials: after Warm, the nodes' first requests
// read nothing from the store (a restarted server's reconnecting fleet);
// join tokens are not cached; a credential whose change was reported
// while the list ran is not cached, so its next request reads the store
// and a deleted one is refused.
func TestWarmCachesNodeCredentials(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	creds := map[string]string{}
	for _, n := range []string{"n1", "n2", "n3"} {
		creds[n] = h.join(t, jt, n)
	}
	hooked := &listHook{MemSecretStore: h.store}
	// A restarted server: a new Tokens, an empty cache.
	tok, err := auth.NewTokens(auth.Config{Store: hooked, CAHash: caHash, Clock: h.clk, Invalidated: true})
	if err != nil {
		t.Fatal(err)
	}
	hooked.during = func() {
		// n3's credential is deleted and the change reported while the
		// list is in flight; the list already holds it.
		if err := h.store.DeleteSecret(h.ctx, auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n3"); err != nil {
			t.Fatal(err)
		}
		tok.SecretChanged(auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n3")
	}
	n, err := tok.Warm(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("Warm cached %d credentials; want 2 (n1, n2; not the join token, not n3 changed meanwhile)", n)
	}
	before := h.store.Gets()
	for _, node := range []string{"n1", "n2"} {
		if id, err := tok.Authenticate(h.ctx, creds[node]); err != nil || id.Node != node {
			t.Fatalf("Authenticate(%s) = %v, %v", node, id, err)
		}
	}
	if got := h.store.Gets() - before; got != 0 {
		t.Errorf("%d store reads for warmed credentials; want 0", got)
	}
	if _, err := tok.Authenticate(h.ctx, creds["n3"]); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("credential deleted during Warm: %v; want ErrUnauthenticated", err)
	}
	// A wrong secret for a warmed node is still refused.
	if _, err := tok.Authenticate(h.ctx, creds["n1"][:len(creds["n1"])-1]+"x"); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("wrong secret for a warmed node: %v; want ErrUnauthenticated", err)
	}

	// With the cache off, Warm does nothing.
	off, err := auth.NewTokens(auth.Config{Store: h.store, CAHash: caHash, Clock: h.clk, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := off.Warm(h.ctx); n != 0 || err != nil {
		t.Errorf("Warm with the cache off = %d, %v; want 0, nil", n, err)
	}
	// A failing store is an error, not a panic or a partial cache.
	h.store.SetErr(errors.New("disk on fire"))
	fresh, _ := auth.NewTokens(auth.Config{Store: h.store, CAHash: caHash, Clock: h.clk, Invalidated: true})
	if n, err := fresh.Warm(h.ctx); n != 0 || err == nil {
		t.Errorf("Warm on a failing store = %d, %v; want 0 and an error", n, err)
	}
}
