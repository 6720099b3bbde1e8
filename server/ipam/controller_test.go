package ipam

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

func openStore(t *testing.T, dir string) *storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), storage.Options{Path: filepath.Join(dir, "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func node(name, cidr string) *api.Node {
	return &api.Node{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.NodeSpec{PodCIDR: cidr}}
}

// waitCIDR polls the real SQLite store until node name has a pod CIDR
// matching want ("" = any); it returns the CIDR.
func waitCIDR(t *testing.T, st *storage.Store, name, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		o, err := st.Get(context.Background(), "nodes", "", name)
		if err == nil {
			n := o.(*api.Node)
			if n.Spec.PodCIDR != "" && (want == "" || n.Spec.PodCIDR == want) {
				if len(n.Spec.PodCIDRs) > 1 || len(n.Spec.PodCIDRs) == 1 && n.Spec.PodCIDRs[0] != n.Spec.PodCIDR {
					t.Fatalf("node %s: podCIDRs = %v; want [%s]", name, n.Spec.PodCIDRs, n.Spec.PodCIDR)
				}
				return n.Spec.PodCIDR
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: no pod CIDR %q after 10s (last err %v)", name, want, err)
		}
		time.Sleep(5 * time.Millisecond) // polling real I/O
	}
}

func runController(t *testing.T, st *storage.Store, cidr string) (stop func()) {
	t.Helper()
	c, err := NewController(Config{Store: st, ClusterCIDR: cidr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func TestControllerAssignsReleasesAndReconcilesRealSQLite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t, dir)
	// present before start: one with a CIDR (adopted), one without
	if err := st.Create(ctx, node("old", "10.42.0.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, node("bare", "")); err != nil {
		t.Fatal(err)
	}
	stop := runController(t, st, "10.42.0.0/16")
	waitCIDR(t, st, "old", "10.42.0.0/24")
	waitCIDR(t, st, "bare", "10.42.1.0/24")

	// new nodes through the watch
	if err := st.Create(ctx, node("n2", "")); err != nil {
		t.Fatal(err)
	}
	waitCIDR(t, st, "n2", "10.42.2.0/24")

	// a deleted node's subnet goes to the next node
	if _, err := st.Delete(ctx, "nodes", "", "bare", ""); err != nil {
		t.Fatal(err)
	}
	// the deletion is seen before a later create (one watch, in order)
	if err := st.Create(ctx, node("n3", "")); err != nil {
		t.Fatal(err)
	}
	waitCIDR(t, st, "n3", "10.42.1.0/24")
	stop()

	// restart: allocations come back from the Node objects; nothing doubles
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir)
	defer st.Close()
	if err := st.Create(ctx, node("n4", "")); err != nil {
		t.Fatal(err)
	}
	stop = runController(t, st, "10.42.0.0/16")
	defer stop()
	waitCIDR(t, st, "n4", "10.42.3.0/24")
	seen := map[string]string{}
	for _, name := range []string{"old", "n2", "n3", "n4"} {
		c := waitCIDR(t, st, name, "")
		if other, dup := seen[c]; dup {
			t.Fatalf("nodes %s and %s share pod CIDR %s", other, name, c)
		}
		seen[c] = name
	}
}
