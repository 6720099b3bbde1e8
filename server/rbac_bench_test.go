package server

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/storage"
)

// BenchmarkRBACAllowsRealSQLite measures one RBAC decision for a service
// account, as every request by a service account token makes it: the
// default cluster role bindings plus 50 role bindings in the namespace,
// read from a real SQLite store.
func BenchmarkRBACAllowsRealSQLite(b *testing.B) {
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Options{Path: filepath.Join(b.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	s := &server{store: st, rbac: &rbacCache{store: st}}
	for _, cr := range auth.DefaultClusterRoles() {
		if err := st.Create(ctx, cr); err != nil {
			b.Fatal(err)
		}
	}
	for _, crb := range auth.DefaultClusterRoleBindings() {
		if err := st.Create(ctx, crb); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 50 {
		rb := &api.RoleBinding{
			RoleRef:  api.RoleRef{APIGroup: api.GroupRBAC, Kind: "ClusterRole", Name: "view"},
			Subjects: []api.Subject{{Kind: "ServiceAccount", Name: fmt.Sprintf("sa%d", i), Namespace: "team"}},
		}
		rb.Name, rb.Namespace = fmt.Sprintf("rb%d", i), "team"
		api.SetTypeMeta(rb)
		if err := st.Create(ctx, rb); err != nil {
			b.Fatal(err)
		}
	}
	id := auth.Identity{User: auth.ServiceAccountUser("team", "sa49"), Groups: []string{auth.GroupServiceAccounts, auth.GroupServiceAccounts + ":team"}}
	a := auth.Attributes{Verb: "list", Resource: "pods", Namespace: "team"}
	b.ReportAllocs()
	for b.Loop() {
		ok, _, err := s.authorizeUser(ctx, id, a)
		if err != nil || !ok {
			b.Fatalf("authorizeUser = %v, %v", ok, err)
		}
	}
}
