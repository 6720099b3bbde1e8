package auth_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/server/auth/authtest"
)

func TestConfigValidate(t *testing.T) {
	store := &authtest.MemSecretStore{}
	tests := []struct {
		name string
		cfg  auth.Config
		ok   bool
	}{
		{"minimal", auth.Config{Store: store, CAHash: caHash}, true},
		{"with admin", auth.Config{Store: store, CAHash: caHash, AdminToken: admin}, true},
		{"no store", auth.Config{CAHash: caHash}, false},
		{"bad hash", auth.Config{Store: store, CAHash: "abc"}, false},
		{"short admin", auth.Config{Store: store, CAHash: caHash, AdminToken: "admin"}, false},
		{"admin with space", auth.Config{Store: store, CAHash: caHash, AdminToken: "abcdefgh ijklmnopq"}, false},
		{"negative ttl", auth.Config{Store: store, CAHash: caHash, CacheTTL: -time.Second}, false},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); (err == nil) != tt.ok {
			t.Errorf("Config{%s}.Validate() = %v; want ok %v", tt.name, err, tt.ok)
		}
	}
}

func TestCreateJoinTokenStoresOnlyHash(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 24*time.Hour)
	s, err := h.store.GetSecret(h.ctx, auth.SystemNamespace, auth.JoinTokenSecretPrefix+jt.ID)
	if err != nil {
		t.Fatalf("token Secret: %v", err)
	}
	if s.Type != auth.SecretTypeJoinToken {
		t.Errorf("Secret type = %q; want %q", s.Type, auth.SecretTypeJoinToken)
	}
	want := map[string]string{
		"token-id":    jt.ID,
		"secret-hash": auth.HashSecret(jt.Secret),
		"description": "test",
		"expiration":  "2026-03-02T12:00:00Z",
		"usage":       "join",
	}
	if len(s.Data) != len(want) {
		t.Errorf("Secret data keys = %d; want %d", len(s.Data), len(want))
	}
	for k, v := range want {
		if got := string(s.Data[k]); got != v {
			t.Errorf("Secret data[%q] = %q; want %q", k, got, v)
		}
	}
	for k, v := range s.Data {
		if strings.Contains(string(v), jt.Secret) {
			t.Errorf("Secret data[%q] holds the token secret", k)
		}
	}
}

func TestListAndDeleteJoinTokens(t *testing.T) {
	h := newHarness(t)
	a := h.create(t, time.Hour)
	b := h.create(t, 0)
	// A Secret of another type in the namespace is not a token.
	h.store.Put(&api.Secret{ObjectMeta: api.ObjectMeta{Namespace: auth.SystemNamespace, Name: "other"}, Type: "Opaque"})

	got, err := h.tok.ListJoinTokens(h.ctx)
	if err != nil {
		t.Fatalf("ListJoinTokens: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("ListJoinTokens = %d tokens; want 2", len(got))
	}
	byID := map[string]auth.JoinTokenInfo{got[0].ID: got[0], got[1].ID: got[1]}
	if e := byID[a.ID].Expires; !e.Equal(t0.Add(time.Hour)) {
		t.Errorf("token %s Expires = %v; want %v", a.ID, e, t0.Add(time.Hour))
	}
	if e := byID[b.ID].Expires; !e.IsZero() {
		t.Errorf("token %s Expires = %v; want zero (never)", b.ID, e)
	}
	if s := fmt.Sprintf("%+v", got); strings.Contains(s, a.Secret) || strings.Contains(s, b.Secret) {
		t.Error("ListJoinTokens output contains a secret")
	}

	if err := h.tok.DeleteJoinToken(h.ctx, a.ID); err != nil {
		t.Fatalf("DeleteJoinToken(%q): %v", a.ID, err)
	}
	if _, err := h.tok.Join(h.ctx, a.String(), "n1", ""); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("Join with a deleted token = %v; want ErrInvalidToken", err)
	}
	for _, id := range []string{a.ID, "zzzzzz", "other", a.String()} {
		err := h.tok.DeleteJoinToken(h.ctx, id)
		if !errors.Is(err, auth.ErrTokenNotFound) {
			t.Errorf("DeleteJoinToken(%q) = %v; want ErrTokenNotFound", id, err)
		}
		noSecretIn(t, "DeleteJoinToken", err, a.Secret)
	}
	if names := h.store.Names(); len(names) != 2 {
		t.Errorf("store holds %v; want token %s and the other Secret", names, b.ID)
	}
}

func TestCreateJoinTokenRejectsBadInput(t *testing.T) {
	h := newHarness(t)
	if _, err := h.tok.CreateJoinToken(h.ctx, -time.Second, ""); err == nil {
		t.Error("CreateJoinToken(ttl -1s) = nil error; want an error")
	}
	if _, err := h.tok.CreateJoinToken(h.ctx, time.Hour, strings.Repeat("x", auth.MaxDescriptionLen+1)); err == nil {
		t.Error("CreateJoinToken(long description) = nil error; want an error")
	}
}

func TestJoinChecksToken(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, time.Hour)
	wrongSecret := jt
	wrongSecret.Secret = strings.Repeat("a", 32)
	unknownID := jt
	unknownID.ID = "zzzzzz"
	otherCA := jt
	otherCA.CAHash = caHash2

	tests := []struct {
		name    string
		token   string
		node    string
		advance time.Duration
		want    error
	}{
		{"malformed", "SKF1.nope", "n1", 0, auth.ErrInvalidToken},
		{"not a token at all", jt.Secret, "n1", 0, auth.ErrInvalidToken},
		{"wrong secret", wrongSecret.String(), "n1", 0, auth.ErrInvalidToken},
		{"unknown id", unknownID.String(), "n1", 0, auth.ErrInvalidToken},
		{"other CA", otherCA.String(), "n1", 0, auth.ErrWrongCA},
		{"bad node name", jt.String(), "Node_1", 0, auth.ErrInvalidNodeName},
		{"empty node name", jt.String(), "", 0, auth.ErrInvalidNodeName},
		{"a second before expiry", jt.String(), "n1", time.Hour - time.Second, nil},
		{"at expiry", jt.String(), "n2", time.Second, auth.ErrExpiredToken},
		{"expired, wrong secret", wrongSecret.String(), "n3", 0, auth.ErrInvalidToken},
	}
	for _, tt := range tests {
		h.clk.Advance(tt.advance)
		cred, err := h.tok.Join(h.ctx, tt.token, tt.node, "")
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("Join(%s) = %v; want %v", tt.name, err, tt.want)
		}
		if tt.want == nil && !strings.HasPrefix(cred, "SKN1."+tt.node+".") {
			t.Errorf("Join(%s) credential has the wrong shape", tt.name)
		}
		noSecretIn(t, "Join("+tt.name+")", err, jt.Secret, wrongSecret.Secret, jt.String())
	}
}

func TestJoinNoImpersonation(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	credA := h.join(t, jt, "node-a")
	credB := h.join(t, jt, "node-b")
	if credA == credB {
		t.Fatal("two nodes got the same credential")
	}
	s, err := h.store.GetSecret(h.ctx, auth.SystemNamespace, auth.NodeCredentialSecretPrefix+"node-a")
	if err != nil {
		t.Fatalf("node credential Secret: %v", err)
	}
	if s.Type != auth.SecretTypeNodeCredential || string(s.Data["node-name"]) != "node-a" ||
		string(s.Data["secret-hash"]) != auth.HashSecret(credA[strings.LastIndexByte(credA, '.')+1:]) || len(s.Data) != 2 {
		t.Errorf("node credential Secret = %+v; want type, node-name and secret-hash only", s)
	}

	tests := []struct {
		name     string
		existing string
		want     error
	}{
		{"join token only", "", auth.ErrNodeNameTaken},
		{"another node's credential", credB, auth.ErrNodeNameTaken},
		{"garbage", "SKN1.node-a.nothex", auth.ErrNodeNameTaken},
		{"own credential with a flipped secret", credA[:len(credA)-1] + flip(credA[len(credA)-1]), auth.ErrNodeNameTaken},
		{"own credential", credA, nil},
	}
	for _, tt := range tests {
		got, err := h.tok.Join(h.ctx, jt.String(), "node-a", tt.existing)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("re-Join(node-a, %s) = %v; want %v", tt.name, err, tt.want)
			continue
		}
		if tt.want == nil && got != credA {
			t.Errorf("re-Join(node-a, own credential) returned another credential; want it kept")
		}
		noSecretIn(t, "re-Join("+tt.name+")", err, credA, credB, jt.Secret)
	}
	// The refused attempts changed nothing: node-a still authenticates.
	if id, err := h.tok.Authenticate(h.ctx, credA); err != nil || id.Node != "node-a" {
		t.Errorf("Authenticate(credA) after refused re-joins = %v, %v; want node-a", id, err)
	}
}

func flip(c byte) string {
	if c == '0' {
		return "1"
	}
	return "0"
}

func TestJoinConcurrentSameName(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = h.tok.Join(h.ctx, jt.String(), "same", "") })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, auth.ErrNodeNameTaken):
			t.Errorf("concurrent Join = %v; want nil or ErrNodeNameTaken", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d of %d concurrent joins of one name succeeded; want exactly 1", ok, n)
	}
}

func TestJoinStoreFailure(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	boom := errors.New("disk on fire")
	h.store.SetErr(boom)
	_, err := h.tok.Join(h.ctx, jt.String(), "n1", "")
	if !errors.Is(err, boom) || errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("Join with a failing store = %v; want the store error, not ErrInvalidToken", err)
	}
	noSecretIn(t, "Join(store failure)", err, jt.Secret)
}

func TestDeleteNodeCredentialAllowsFreshJoin(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	old := h.join(t, jt, "n1")
	if err := h.tok.DeleteNodeCredential(h.ctx, "n1"); err != nil {
		t.Fatalf("DeleteNodeCredential: %v", err)
	}
	if err := h.tok.DeleteNodeCredential(h.ctx, "n1"); !api.IsNotFound(err) {
		t.Errorf("second DeleteNodeCredential = %v; want NotFound", err)
	}
	fresh := h.join(t, jt, "n1")
	if fresh == old {
		t.Fatal("re-join after delete returned the old credential")
	}
	if _, err := h.tok.Authenticate(h.ctx, old); !errors.Is(err, auth.ErrUnauthenticated) {
		t.Errorf("Authenticate(old credential) = %v; want ErrUnauthenticated", err)
	}
	if id, err := h.tok.Authenticate(h.ctx, fresh); err != nil || id.Node != "n1" {
		t.Errorf("Authenticate(new credential) = %v, %v; want node n1", id, err)
	}
}

func TestDeleteExpiredJoinTokens(t *testing.T) {
	h := newHarness(t)
	short := h.create(t, time.Hour)
	long := h.create(t, 48*time.Hour)
	never := h.create(t, 0)
	if n, err := h.tok.DeleteExpiredJoinTokens(h.ctx); err != nil || n != 0 {
		t.Fatalf("DeleteExpiredJoinTokens before any expiry = %d, %v; want 0, nil", n, err)
	}
	h.clk.Advance(time.Hour)
	if n, err := h.tok.DeleteExpiredJoinTokens(h.ctx); err != nil || n != 1 {
		t.Fatalf("DeleteExpiredJoinTokens after 1h = %d, %v; want 1, nil", n, err)
	}
	got, err := h.tok.ListJoinTokens(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, i := range got {
		ids[i.ID] = true
	}
	if ids[short.ID] || !ids[long.ID] || !ids[never.ID] {
		t.Errorf("tokens left = %v; want %s and %s, not %s", ids, long.ID, never.ID, short.ID)
	}
}

// TestJoinProposedCredentialSurvivesALostAnswer: an agent proposes the
// credential it kept before asking; when the answer is lost it retries
// with the same proposal and is let in, with that credential, while
// another machine with only the token, or proposing another secret, is
// refused. A malformed proposal or one for another name is ignored (a
// fresh credential is made), and concurrent attempts with one proposal
// all succeed.
func TestJoinProposedCredentialSurvivesALostAnswer(t *testing.T) {
	h := newHarness(t)
	jt := h.create(t, 0)
	proposed := "SKN1.edge-1." + strings.Repeat("ab", 32)
	got, err := h.tok.Join(h.ctx, jt.String(), "edge-1", proposed)
	if err != nil || got != proposed {
		t.Fatalf("Join(edge-1, proposed) = %q, %v; want the proposal", got, err)
	}
	// The answer was lost: the retry carries the same proposal.
	if got, err = h.tok.Join(h.ctx, jt.String(), "edge-1", proposed); err != nil || got != proposed {
		t.Fatalf("retried Join(edge-1, proposed) = %q, %v; want the proposal again", got, err)
	}
	if id, err := h.tok.Authenticate(h.ctx, proposed); err != nil || id.Node != "edge-1" {
		t.Fatalf("Authenticate(proposed) = %v, %v; want edge-1", id, err)
	}
	for name, other := range map[string]string{"token only": "", "another secret": "SKN1.edge-1." + strings.Repeat("cd", 32)} {
		if _, err := h.tok.Join(h.ctx, jt.String(), "edge-1", other); !errors.Is(err, auth.ErrNodeNameTaken) {
			t.Errorf("Join(edge-1, %s) = %v; want ErrNodeNameTaken", name, err)
		}
	}
	for name, bad := range map[string]string{"short secret": "SKN1.edge-2.abcd", "upper hex": "SKN1.edge-2." + strings.Repeat("AB", 32),
		"other node": "SKN1.edge-9." + strings.Repeat("ef", 32), "not a credential": "hello"} {
		got, err := h.tok.Join(h.ctx, jt.String(), "edge-2", bad)
		if err != nil || got == bad || !strings.HasPrefix(got, "SKN1.edge-2.") {
			t.Errorf("Join(edge-2, %s) = %q, %v; want a fresh credential", name, got, err)
		}
		if err := h.tok.DeleteNodeCredential(h.ctx, "edge-2"); err != nil {
			t.Fatal(err)
		}
	}
	const n = 8
	same := "SKN1.edge-3." + strings.Repeat("12", 32)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = h.tok.Join(h.ctx, jt.String(), "edge-3", same) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Join #%d with one proposal = %v; want nil", i, err)
		}
	}
}
