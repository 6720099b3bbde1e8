package auth_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
)

func TestAuthenticate(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	credA := h.join(t, jt, "node-a")
	credB := h.join(t, jt, "node-b")
	secretB := credB[strings.LastIndexByte(credB, '.')+1:]
	// A Secret an admin wrote by hand under a node credential's name.
	h.store.Put(&api.Secret{ObjectMeta: api.ObjectMeta{Namespace: auth.SystemNamespace, Name: auth.NodeCredentialSecretPrefix + "fake"}, Type: "Opaque",
		Data: map[string][]byte{"node-name": []byte("fake"), "secret-hash": []byte(auth.HashSecret(secretB))}})

	tests := []struct {
		name   string
		bearer string
		want   auth.Identity
		err    error
	}{
		{"admin", admin, auth.Identity{Admin: true}, nil},
		{"node a", credA, auth.Identity{Node: "node-a"}, nil},
		{"node b", credB, auth.Identity{Node: "node-b"}, nil},
		{"empty", "", auth.Identity{}, auth.ErrUnauthenticated},
		{"admin with a newline", admin + "\n", auth.Identity{}, auth.ErrUnauthenticated},
		{"admin prefix", admin[:len(admin)-1], auth.Identity{}, auth.ErrUnauthenticated},
		{"join token", jt.String(), auth.Identity{}, auth.ErrUnauthenticated},
		{"b's secret under a's name", "SKN1.node-a." + secretB, auth.Identity{}, auth.ErrUnauthenticated},
		{"unknown node", "SKN1.node-z." + secretB, auth.Identity{}, auth.ErrUnauthenticated},
		{"Secret of the wrong type", "SKN1.fake." + secretB, auth.Identity{}, auth.ErrUnauthenticated},
		{"garbage", "Bearer xyz", auth.Identity{}, auth.ErrUnauthenticated},
	}
	for _, tt := range tests {
		// Twice: the second answer may come from the cache.
		for _, pass := range []string{"first", "second"} {
			got, err := h.tok.Authenticate(h.ctx, tt.bearer)
			if !reflect.DeepEqual(got, tt.want) || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Errorf("Authenticate(%s) %s = %v, %v; want %v, %v", tt.name, pass, got, err, tt.want, tt.err)
			}
			noSecretIn(t, "Authenticate("+tt.name+")", err, admin, credA, credB, secretB, jt.Secret)
		}
	}
}

func TestAuthenticateWithoutAdminToken(t *testing.T) {
	h := newHarness(t)
	tok, err := auth.NewTokens(auth.Config{Store: h.store, CAHash: caHash})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tok.Authenticate(h.ctx, admin); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate(admin) with no admin token configured = %v; want ErrUnauthenticated", err)
	}
}

func TestAuthenticateCachesNodeLookups(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	cred := h.join(t, jt, "n1")
	gets := func() int { return h.store.Gets() }

	before := gets()
	for range 5 {
		if _, err := h.tok.Authenticate(h.ctx, cred); err != nil {
			t.Fatal(err)
		}
	}
	if got := gets() - before; got != 1 {
		t.Errorf("5 authentications read the store %d times; want 1", got)
	}
	// Past the TTL the store is read again.
	h.clk.Advance(time.Minute)
	before = gets()
	if _, err := h.tok.Authenticate(h.ctx, cred); err != nil {
		t.Fatal(err)
	}
	if got := gets() - before; got != 1 {
		t.Errorf("authentication after the TTL read the store %d times; want 1", got)
	}
	// Deleting through Tokens takes effect at once, cache or not.
	if err := h.tok.DeleteNodeCredential(h.ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.tok.Authenticate(h.ctx, cred); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate after DeleteNodeCredential = %v; want ErrUnauthenticated", err)
	}
}

func TestAuthenticateOutOfBandDelete(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	cred := h.join(t, jt, "n1")
	if _, err := h.tok.Authenticate(h.ctx, cred); err != nil {
		t.Fatal(err)
	}
	// An admin deletes the Secret through the API, not through Tokens.
	if err := h.store.DeleteSecret(h.ctx, auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n1"); err != nil {
		t.Fatal(err)
	}
	h.clk.Advance(time.Minute)
	if _, err := h.tok.Authenticate(h.ctx, cred); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate a TTL after an out-of-band delete = %v; want ErrUnauthenticated", err)
	}
	// With InvalidateNode, at once.
	cred = h.join(t, jt, "n1")
	if _, err := h.tok.Authenticate(h.ctx, cred); err != nil {
		t.Fatal(err)
	}
	if err := h.store.DeleteSecret(h.ctx, auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"n1"); err != nil {
		t.Fatal(err)
	}
	h.tok.InvalidateNode("n1")
	if _, err := h.tok.Authenticate(h.ctx, cred); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate after InvalidateNode = %v; want ErrUnauthenticated", err)
	}
}

// pausingStore lets a test run code in the middle of a GetSecret: after
// the read, before it returns.
type pausingStore struct {
	auth.SecretStore
	during func()
}

func (p *pausingStore) GetSecret(ctx context.Context, ns, name string) (*api.Secret, error) {
	s, err := p.SecretStore.GetSecret(ctx, ns, name)
	if f := p.during; f != nil {
		p.during = nil
		f()
	}
	return s, err
}

func TestAuthenticateRacingDeleteDoesNotCache(t *testing.T) {
	h := newHarness(t)
	ps := &pausingStore{SecretStore: h.store}
	tok := h.newTokens(t, ps)
	jt := h.create(t, 0)
	cred := h.join(t, jt, "n1")

	// The lookup reads the credential, then the deletion completes, then
	// the lookup finishes. It may succeed (it began first) but must not
	// leave the credential cached.
	ps.during = func() {
		if err := tok.DeleteNodeCredential(h.ctx, "n1"); err != nil {
			t.Errorf("DeleteNodeCredential: %v", err)
		}
	}
	if _, err := tok.Authenticate(h.ctx, cred); err != nil {
		t.Fatalf("Authenticate racing the delete = %v; want success (it read first)", err)
	}
	if _, err := tok.Authenticate(h.ctx, cred); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate after the racing delete = %v; want ErrUnauthenticated", err)
	}
}

func TestAuthenticateStoreFailure(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	cred := h.join(t, jt, "n1")
	boom := errors.New("store down")
	h.store.SetErr(boom)
	_, err := h.tok.Authenticate(h.ctx, cred)
	if !errors.Is(err, boom) || errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate with a failing store = %v; want the store error, not ErrUnauthenticated", err)
	}
	noSecretIn(t, "Authenticate(store failure)", err, cred, cred[strings.LastIndexByte(cred, '.')+1:])
	// The admin token needs no store.
	if id, err := h.tok.Authenticate(h.ctx, admin); err != nil || !id.Admin {
		t.Errorf("Authenticate(admin) with a failing store = %v, %v; want admin", id, err)
	}
}

func TestIdentityString(t *testing.T) {
	tests := []struct {
		id   auth.Identity
		want string
	}{
		{auth.Identity{}, "anonymous"},
		{auth.Identity{Admin: true}, "admin"},
		{auth.Identity{Node: "a"}, `node "a"`},
	}
	for _, tt := range tests {
		if got := tt.id.String(); got != tt.want {
			t.Errorf("%#v.String() = %q; want %q", tt.id, got, tt.want)
		}
		if got := tt.id.IsAnonymous(); got != (tt.want == "anonymous") {
			t.Errorf("%#v.IsAnonymous() = %v", tt.id, got)
		}
	}
}
