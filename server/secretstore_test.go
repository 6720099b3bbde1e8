package server

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/storage"
)

// TestSecretStoreListsByType: ListSecrets with a type returns only the
// Secrets of that type in the namespace (the join tokens' sweep, among a
// fleet's node credentials), and with "" every Secret there.
func TestSecretStoreListsByType(t *testing.T) {
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Options{Path: filepath.Join(t.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ss := secretStore{st: st, clk: clock.Real{}}
	for _, s := range []struct{ ns, name, typ string }{
		{auth.SystemNamespace, "skiff-token-a", auth.SecretTypeJoinToken},
		{auth.SystemNamespace, "skiff-node-n1", auth.SecretTypeNodeCredential},
		{auth.SystemNamespace, "skiff-node-n2", auth.SecretTypeNodeCredential},
		{auth.SystemNamespace, "plain", ""},
		{"team", "skiff-token-b", auth.SecretTypeJoinToken},
	} {
		sec := &api.Secret{ObjectMeta: api.ObjectMeta{Namespace: s.ns, Name: s.name}, Type: s.typ}
		if err := ss.CreateSecret(ctx, sec); err != nil {
			t.Fatalf("create %s/%s: %v", s.ns, s.name, err)
		}
	}
	for _, tt := range []struct {
		typ  string
		want []string
	}{
		{auth.SecretTypeJoinToken, []string{"skiff-token-a"}},
		{auth.SecretTypeNodeCredential, []string{"skiff-node-n1", "skiff-node-n2"}},
		{"", []string{"plain", "skiff-node-n1", "skiff-node-n2", "skiff-token-a"}},
		{"skiff.io/none", nil},
	} {
		got, err := ss.ListSecrets(ctx, auth.SystemNamespace, tt.typ)
		if err != nil {
			t.Fatalf("ListSecrets(%q): %v", tt.typ, err)
		}
		var names []string
		for _, s := range got {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, tt.want) {
			t.Errorf("ListSecrets(%q) = %v; want %v", tt.typ, names, tt.want)
		}
	}
}
