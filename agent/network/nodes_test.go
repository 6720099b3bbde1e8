package network

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

// recordingSink keeps the last node set it was given.
type recordingSink struct {
	mu    sync.Mutex
	last  map[string]string // name -> podCIDR
	calls chan struct{}
}

func (s *recordingSink) SetNodes(nodes []*api.Node) error {
	s.mu.Lock()
	s.last = map[string]string{}
	for _, n := range nodes {
		s.last[n.Name] = n.Spec.PodCIDR
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
