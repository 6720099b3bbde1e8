package proxy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// countingLW is the real client, counting its Lists by resource.
type countingLW struct {
	*client.Client
	mu    sync.Mutex
	lists map[string]int
	watch atomic.Int32
}

func (c *countingLW) List(ctx context.Context, res api.ResourceInfo, ns string, opts client.ListOptions) ([]api.Object, string, error) {
	c.mu.Lock()
	c.lists[res.Resource]++
	c.mu.Unlock()
	return c.Client.List(ctx, res, ns, opts)
}

func (c *countingLW) Watch(ctx context.Context, res api.ResourceInfo, ns string, opts client.WatchOptions) (*client.Watcher, error) {
	c.watch.Add(1)
	return c.Client.Watch(ctx, res, ns, opts)
}

func createService(t *testing.T, srv *agenttest.Server, name string) {
	t.Helper()
	_, err := srv.Admin.Create(context.Background(), &api.Service{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       api.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []api.ServicePort{{Name: "http", Port: 80}}},
	})
	if err != nil {
		t.Fatalf("create service %s: %v", name, err)
	}
}

// TestWatcherResumesAfterServerRestartRealServer: after the server
// restarts, the Service and EndpointSlice watches resume from the last
// version each saw; neither lists again, and a Service created after the
// restart reaches the sink.
func TestWatcherResumesAfterServerRestartRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	createService(t, srv, "a")
	lw := &countingLW{Client: srv.NodeClient("n1"), lists: map[string]int{}}
	var mu sync.Mutex
	var last *Snapshot
	sink := SinkFunc(func(s *Snapshot) error {
		mu.Lock()
		last = s
		mu.Unlock()
		return nil
	})
	has := func(names ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			if last == nil {
				return false
			}
			seen := map[string]bool{}
			for _, s := range last.Services {
				seen[s.Name] = true
			}
			for _, n := range names {
				if !seen[n] {
					return false
				}
			}
			return true
		}
	}
	clk := clock.NewFake(time.Unix(1e9, 0))
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watcher{Client: lw, Sinks: []Sink{sink}, Clock: clk}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	agenttest.Pump(t, clk, time.Second, "service a", has("a"))

	srv.Stop()
	srv.Start()
	createService(t, srv, "b")
	agenttest.Pump(t, clk, time.Second, "services a and b after the restart", has("a", "b"))
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.lists["services"] != 1 || lw.lists["endpointslices"] != 1 {
		t.Errorf("lists %v; want one of each (the restart resumed the watches)", lw.lists)
	}
	if n := lw.watch.Load(); n < 3 {
		t.Errorf("%d watches; want the first two and at least one resumed", n)
	}
}

// holdFile keeps the file at path now under a second name (a hard
// link) and returns whether path is still that file: atomicfile.Replace
// renames a new file over it, and the link keeps the old one's inode
// from being reused by the next.
func holdFile(t *testing.T, path string) (same func() bool) {
	t.Helper()
	held := path + ".held"
	os.Remove(held)
	if err := os.Link(path, held); err != nil {
		t.Fatal(err)
	}
	return func() bool {
		a, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.Stat(held)
		if err != nil {
			t.Fatal(err)
		}
		return os.SameFile(a, b)
	}
}

// TestWatcherWritesCheckpointOnlyWhenChangedRealServer: a sync whose
// snapshot is the one on disk (the checkpoint read at start, then a
// sync with nothing changed) does not write the checkpoint again, while
// the sinks still get it; a change does write it. An edge agent's flash
// was written (with an fsync) at every sync, twice per server restart.
func TestWatcherWritesCheckpointOnlyWhenChangedRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	createService(t, srv, "a")
	path := filepath.Join(t.TempDir(), "agent", "services.json")
	var applied atomic.Int32
	var last atomic.Pointer[Snapshot]
	sink := SinkFunc(func(s *Snapshot) error {
		last.Store(s)
		applied.Add(1)
		return nil
	})
	// seen waits for the last snapshot to hold something match says is
	// name's.
	seen := func(name string, match func(*Snapshot, string) bool) func() bool {
		return func() bool {
			s := last.Load()
			return s != nil && match(s, name)
		}
	}
	has := func(name string) func() bool {
		return seen(name, func(s *Snapshot, name string) bool {
			return slices.ContainsFunc(s.Services, func(v *api.Service) bool { return v.Name == name })
		})
	}
	// The server's EndpointSlice controller gives "a" an empty slice on
	// its own, after the Service: a sync that brings it is a change.
	hasSlice := func(name string) func() bool {
		return seen(name, func(s *Snapshot, name string) bool {
			return slices.ContainsFunc(s.Slices, func(sl *api.EndpointSlice) bool { return sl.Labels[api.LabelServiceName] == name })
		})
	}
	c := srv.NodeClient("n1")
	var lw *countingLW
	run := func() (*Watcher, func()) {
		clk := clock.NewFake(time.Unix(1e9, 0))
		ctx, cancel := context.WithCancel(context.Background())
		lw = &countingLW{Client: c, lists: map[string]int{}}
		w := &Watcher{Client: lw, Sinks: []Sink{sink}, Clock: clk, Checkpoint: path}
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		return w, func() { cancel(); <-done }
	}
	listed := func() bool {
		lw.mu.Lock()
		defer lw.mu.Unlock()
		return lw.lists["services"] == 1 && lw.lists["endpointslices"] == 1
	}
	// sync has the watcher sync with nothing changed, and waits until
	// the sinks applied it (the checkpoint is kept after them; the
	// sync after this one starts once it is).
	sync := func(w *Watcher) {
		n := applied.Load()
		w.notify()
		agenttest.Eventually(t, "the sync applied", func() bool { return applied.Load() > n })
	}
	w, stop := run()
	agenttest.Eventually(t, "service a at the sink", has("a"))
	agenttest.Eventually(t, "service a's endpoint slice at the sink", hasSlice("a"))
	agenttest.Eventually(t, "the lists", listed)
	sync(w)
	sync(w) // the one before has kept its checkpoint
	same := holdFile(t, path)
	sync(w)
	sync(w)
	if !same() {
		t.Errorf("a sync with nothing changed wrote the checkpoint again")
	}
	stop()

	// A restart of the agent syncs the checkpoint it read, and then the
	// same lists: no write.
	last.Store(nil)
	w, stop = run()
	defer stop()
	agenttest.Eventually(t, "service a at the sink after the restart", has("a"))
	agenttest.Eventually(t, "the lists after the restart", listed)
	sync(w)
	sync(w)
	if !same() {
		t.Errorf("the restarted watcher wrote the checkpoint it had read")
	}
	n := applied.Load()
	createService(t, srv, "b")
	agenttest.Eventually(t, "service b at the sink", has("b"))
	// The checkpoint is written after the sinks applied.
	agenttest.Eventually(t, "the checkpoint written for the new Service", func() bool { return !same() })
	if applied.Load() <= n {
		t.Fatalf("no sync after the new Service")
	}
}
