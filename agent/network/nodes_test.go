package network

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/peerfeed"
)

// recordingSink keeps the last node set it was given.
type recordingSink struct {
	mu    sync.Mutex
	last  map[string]string // name -> podCIDR
	calls chan struct{}
}

func (s *recordingSink) SetPeers(nodes []peerfeed.Peer) error {
	s.mu.Lock()
	s.last = map[string]string{}
	for _, n := range nodes {
		s.last[n.Name] = n.PodCIDR
	}
	s.mu.Unlock()
	select {
	case s.calls <- struct{}{}:
	default:
	}
	return nil
}

func (s *recordingSink) waitFor(t *testing.T, what string, ok func(map[string]string) bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		s.mu.Lock()
		done := ok(s.last)
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-s.calls:
		case <-deadline:
			t.Fatalf("node watcher: %s not seen within 15s (last %v)", what, s.last)
		}
	}
}

// TestNodeWatcherWithNodeCredentialRealServer runs a real server (whose
// node IPAM assigns podCIDRs) and watches every Node with one node's own
// credential, which may read all Nodes.
func TestNodeWatcherWithNodeCredentialRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, _ := api.LookupResource("nodes")
	for _, name := range []string{"node-a", "node-b"} {
		n := &api.Node{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: api.ObjectMeta{Name: name}}
		if _, err := srv.Admin.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	sink := &recordingSink{calls: make(chan struct{}, 1)}
	w := &NodeWatcher{Client: srv.NodeClient("node-a"), Sink: sink, Retry: 100 * time.Millisecond}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	sink.waitFor(t, "both nodes with podCIDRs", func(m map[string]string) bool {
		return len(m) == 2 && m["node-a"] != "" && m["node-b"] != "" && m["node-a"] != m["node-b"]
	})
	if err := srv.Admin.Delete(ctx, res, "", "node-b", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sink.waitFor(t, "node-b gone", func(m map[string]string) bool { _, ok := m["node-b"]; return !ok && len(m) == 1 })
	cancel()
	<-done
}

// countingLW is the real client, counting its Lists and Watches; gone
// makes the next Watch from a version answer 410 Gone.
type countingLW struct {
	*client.Client
	lists, watches atomic.Int32
	gone           atomic.Bool
}

func (c *countingLW) List(ctx context.Context, res api.ResourceInfo, ns string, opts client.ListOptions) ([]api.Object, string, error) {
	c.lists.Add(1)
	return c.Client.List(ctx, res, ns, opts)
}

func (c *countingLW) Watch(ctx context.Context, res api.ResourceInfo, ns string, opts client.WatchOptions) (*client.Watcher, error) {
	c.watches.Add(1)
	if opts.ResourceVersion != "" && c.gone.CompareAndSwap(true, false) {
		return nil, api.NewStatusError(http.StatusGone, api.StatusReasonExpired, "too old resource version")
	}
	return c.Client.Watch(ctx, res, ns, opts)
}

func createNode(t *testing.T, srv *agenttest.Server, name string) {
	t.Helper()
	n := &api.Node{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: api.ObjectMeta{Name: name}}
	if _, err := srv.Admin.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// startNodeWatcher runs a NodeWatcher on a fake clock with lw until the
// test ends, and waits for the nodes named.
func startNodeWatcher(t *testing.T, lw client.ListWatcher, names ...string) (*recordingSink, *clock.Fake) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sink := &recordingSink{calls: make(chan struct{}, 1)}
	clk := clock.NewFake(time.Unix(1e9, 0))
	w := &NodeWatcher{Client: lw, Sink: sink, Clock: clk, Retry: time.Second, RetryMax: time.Second, Logger: slog.New(slog.DiscardHandler)}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	sink.waitFor(t, strings.Join(names, ", "), func(m map[string]string) bool {
		for _, n := range names {
			if _, ok := m[n]; !ok {
				return false
			}
		}
		return len(m) == len(names)
	})
	return sink, clk
}

// TestNodeWatcherResumesAfterServerRestartRealServer: when the server
// restarts, the watcher resumes its watch from the last version it saw,
// as client-go's reflector does; it does not list every Node again (at
// 10,000 agents, 10,000 lists of 10,000 Nodes).
func TestNodeWatcherResumesAfterServerRestartRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	createNode(t, srv, "node-a")
	createNode(t, srv, "node-b")
	lw := &countingLW{Client: srv.NodeClient("node-a")}
	sink, clk := startNodeWatcher(t, lw, "node-a", "node-b")

	srv.Stop()
	srv.Start()
	createNode(t, srv, "node-c")
	agenttest.Pump(t, clk, time.Second, "node-c after the restart", has(sink, "node-a", "node-b", "node-c"))
	if n := lw.lists.Load(); n != 1 {
		t.Errorf("%d lists of the Nodes; want 1 (the restart resumed the watch)", n)
	}
	if n := lw.watches.Load(); n < 2 {
		t.Errorf("%d watches; want the first and at least one resumed", n)
	}
}

// TestNodeWatcherListsAgainWhenGoneRealServer: a version the server no
// longer has (410) makes the watcher list again, at once, and a Node
// deleted meanwhile leaves the sink.
func TestNodeWatcherListsAgainWhenGoneRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	createNode(t, srv, "node-a")
	createNode(t, srv, "node-b")
	lw := &countingLW{Client: srv.NodeClient("node-a")}
	sink, clk := startNodeWatcher(t, lw, "node-a", "node-b")

	srv.Stop()
	lw.gone.Store(true)
	srv.Start()
	res, _ := api.LookupResource("nodes")
	if err := srv.Admin.Delete(context.Background(), res, "", "node-b", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	agenttest.Pump(t, clk, time.Second, "node-b gone after the relist", has(sink, "node-a"))
	if lw.gone.Load() {
		t.Fatal("no watch from a version was tried after the restart")
	}
	if n := lw.lists.Load(); n != 2 {
		t.Errorf("%d lists of the Nodes; want 2 (the first and the one after the 410)", n)
	}
}
