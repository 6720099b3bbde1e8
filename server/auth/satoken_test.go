package auth

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

func TestServiceAccountTokens(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	key, err := EnsureSigningKey(filepath.Join(t.TempDir(), "sa.key"))
	if err != nil {
		t.Fatal(err)
	}
	accounts := map[string]string{"team/ci": "uid-1"}
	get := func(_ context.Context, ns, name string) (string, error) {
		uid, ok := accounts[ns+"/"+name]
		if !ok {
			return "", api.NewNotFound("serviceaccounts", name)
		}
		return uid, nil
	}
	ts, err := NewServiceAccountTokens(key, clk, get)
	if err != nil {
		t.Fatal(err)
	}
	tok, exp, err := ts.Issue("team", "ci", "uid-1", time.Hour, nil)
	if err != nil || !exp.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("Issue = %v, %v; want expiry in an hour", exp, err)
	}
	id, err := ts.Authenticate(context.Background(), tok)
	if err != nil || id.User != "system:serviceaccount:team:ci" || id.UID != "uid-1" {
		t.Fatalf("Authenticate(fresh token) = %+v, %v", id, err)
	}
	// Another key: the first byte flipped. (Setting it to a fixed byte
	// made the same key once in 256 runs, and the forgery passed.)
	otherKey := append([]byte(nil), key...)
	otherKey[0] ^= 0xff
	other, _ := NewServiceAccountTokens(otherKey, clk, get)
	forged, _, _ := other.Issue("team", "ci", "uid-1", time.Hour, nil)
	parts := strings.Split(tok, ".")
	rootTok, _, _ := ts.Issue("team", "root", "uid-9", time.Hour, nil)
	tests := []struct{ name, tok string }{
		{"another key's signature", forged},
		{"payload swapped", parts[0] + "." + strings.Split(rootTok, ".")[1] + "." + parts[2]},
		{"truncated", tok[:len(tok)-2]},
		{"no signature", parts[0] + "." + parts[1]},
	}
	for _, tt := range tests {
		if _, err := ts.Authenticate(context.Background(), tt.tok); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Authenticate(%s) = %v; want ErrUnauthenticated", tt.name, err)
		}
	}
	// Expiry, on the clock.
	clk.Advance(59 * time.Minute)
	if _, err := ts.Authenticate(context.Background(), tok); err != nil {
		t.Errorf("Authenticate after 59m = %v; want ok", err)
	}
	clk.Advance(time.Minute)
	if _, err := ts.Authenticate(context.Background(), tok); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("Authenticate after 1h = %v; want ErrUnauthenticated", err)
	}
	// Revocation: the account deleted, or made again (a new uid).
	tok2, _, _ := ts.Issue("team", "ci", "uid-1", time.Hour, nil)
	accounts["team/ci"] = "uid-2"
	if _, err := ts.Authenticate(context.Background(), tok2); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("Authenticate after the account was made again = %v; want ErrUnauthenticated", err)
	}
	delete(accounts, "team/ci")
	if _, err := ts.Authenticate(context.Background(), tok2); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("Authenticate after the account was deleted = %v; want ErrUnauthenticated", err)
	}
}

// FuzzServiceAccountToken: no bearer string crashes Authenticate, and
// none but an issued one authenticates.
func FuzzServiceAccountToken(f *testing.F) {
	clk := clock.NewFake(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	key := make([]byte, 32)
	get := func(context.Context, string, string) (string, error) { return "uid-1", nil }
	ts, err := NewServiceAccountTokens(key, clk, get)
	if err != nil {
		f.Fatal(err)
	}
	tok, _, _ := ts.Issue("team", "ci", "uid-1", time.Hour, nil)
	f.Add(tok)
	f.Add("SKS1.")
	f.Add("SKS1.e30.")
	f.Add("SKS1..x")
	f.Fuzz(func(t *testing.T, bearer string) {
		id, err := ts.Authenticate(context.Background(), bearer)
		if err == nil && bearer != tok {
			t.Fatalf("Authenticate(%q) = %+v; only the issued token may authenticate", bearer, id)
		}
	})
}
