package proxy

import (
	"context"
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
