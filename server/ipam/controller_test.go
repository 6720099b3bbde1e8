package ipam

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
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

// fakeRecorder keeps the events recorded.
type fakeRecorder struct {
	mu     sync.Mutex
	events []string // "node reason"
}

func (r *fakeRecorder) Eventf(_ context.Context, obj api.Object, typ, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, obj.GetObjectMeta().Name+" "+typ+" "+reason)
}

func (r *fakeRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// TestControllerQueuesNodesWhenTheRangeIsUsedUp: with every subnet
// taken, a node without one waits (an event on it, one warning in the
// log for the lot, no store write per later change), and a released
// subnet goes to the first node still waiting.
func TestControllerQueuesNodesWhenTheRangeIsUsedUp(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	rec := &fakeRecorder{}
	logs := &testenv.SyncBuffer{}
	c, err := NewController(Config{Store: st, ClusterCIDR: "10.42.0.0/23", Recorder: rec,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { c.Run(rctx); close(done) }()
	defer func() { cancel(); <-done }()

	for _, name := range []string{"a", "b"} {
		if err := st.Create(ctx, node(name, "")); err != nil {
			t.Fatal(err)
		}
	}
	waitCIDR(t, st, "a", "10.42.0.0/24")
	waitCIDR(t, st, "b", "10.42.1.0/24")
	for _, name := range []string{"c", "d", "e"} {
		if err := st.Create(ctx, node(name, "")); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"c Warning CIDRNotAvailable", "d Warning CIDRNotAvailable", "e Warning CIDRNotAvailable"}
	eventually(t, "an event on each waiting node", func() bool { return slices.Equal(rec.list(), want) })

	// Later changes of a waiting node write nothing and say nothing.
	before := st.Revision()
	for i := range 5 {
		if _, err := st.GuaranteedUpdate(ctx, "nodes", "", "d", func(cur api.Object) (api.Object, error) {
			n := cur.(*api.Node)
			n.Labels = map[string]string{"change": strconv.Itoa(i)}
			return n, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// A marker node's event shows the controller has seen the changes.
	if err := st.Create(ctx, node("f", "")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the marker node's event", func() bool { return len(rec.list()) == 4 })
	if got := st.Revision() - before; got != 6 {
		t.Errorf("the store moved %d revisions for 5 label changes and a create; the controller wrote %d times", got, got-6)
	}
	if n := strings.Count(logs.String(), "cluster CIDR is used up"); n != 1 {
		t.Errorf("%d warnings that the range is used up; want 1:\n%s", n, logs)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings in all; want 1:\n%s", n, logs)
	}

	// a's subnet goes to c; d leaves the queue, so b's goes to e.
	if _, err := st.Delete(ctx, "nodes", "", "a", ""); err != nil {
		t.Fatal(err)
	}
	waitCIDR(t, st, "c", "10.42.0.0/24")
	if _, err := st.Delete(ctx, "nodes", "", "d", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Delete(ctx, "nodes", "", "b", ""); err != nil {
		t.Fatal(err)
	}
	waitCIDR(t, st, "e", "10.42.1.0/24")
	if o, err := st.Get(ctx, "nodes", "", "f"); err != nil || o.(*api.Node).Spec.PodCIDR != "" {
		t.Fatalf("node f = %v, %v; want it still without a pod CIDR", o, err)
	}
}

// eventually polls cond (the controller runs on real I/O) for 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling real I/O
	}
}
