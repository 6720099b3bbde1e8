package network

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// feedLW is countingLW with Do counted too; noFeed answers Do with 404,
// as a server older than the peer feed does.
type feedLW struct {
	countingLW
	dos    atomic.Int32
	noFeed bool
}

func (c *feedLW) Do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	c.dos.Add(1)
	if c.noFeed {
		return nil, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "the server could not find the requested resource")
	}
	return c.Client.Do(ctx, method, path, body)
}

func startPeerWatcher(t *testing.T, api PeerAPI) (*recordingSink, *clock.Fake) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sink := &recordingSink{calls: make(chan struct{}, 1)}
	clk := clock.NewFake(time.Unix(1e9, 0))
	w := &PeerWatcher{Client: api, Sink: sink, Clock: clk, Retry: time.Second, RetryMax: time.Second, Logger: slog.New(slog.DiscardHandler)}
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return sink, clk
}

// has reports whether the sink's last set is exactly names, each with
// a podCIDR.
func has(sink *recordingSink, names ...string) func() bool {
	return func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		for _, n := range names {
			if sink.last[n] == "" {
				return false
			}
		}
		return len(sink.last) == len(names)
	}
}

// TestPeerWatcherRealServer: the pod network learns every Node's podCIDR
// from the server's peer feed, without listing or watching Nodes; a
// deleted Node leaves the set; across a server restart the stream
// resumes and a Node created after it arrives.
func TestPeerWatcherRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	createNode(t, srv, "node-a")
	createNode(t, srv, "node-b")
	lw := &feedLW{countingLW: countingLW{Client: srv.NodeClient("node-a")}}
	sink, clk := startPeerWatcher(t, lw)
	agenttest.Pump(t, clk, time.Second, "node-a and node-b with podCIDRs", has(sink, "node-a", "node-b"))
	sink.mu.Lock()
	if sink.last["node-a"] == sink.last["node-b"] {
		t.Errorf("both nodes have podCIDR %s", sink.last["node-a"])
	}
	sink.mu.Unlock()
	res, _ := api.LookupResource("nodes")
	if err := srv.Admin.Delete(context.Background(), res, "", "node-b", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	agenttest.Pump(t, clk, time.Second, "node-b gone", has(sink, "node-a"))

	srv.Stop()
	srv.Start()
	createNode(t, srv, "node-c")
	agenttest.Pump(t, clk, time.Second, "node-c after the restart", has(sink, "node-a", "node-c"))
	if n := lw.lists.Load() + lw.watches.Load(); n != 0 {
		t.Errorf("%d lists and watches of Nodes; want none (the feed carries them)", n)
	}
	if n := lw.dos.Load(); n < 2 {
		t.Errorf("%d feed streams; want the first and one after the restart", n)
	}
}

// TestPeerWatcherWithoutFeedWatchesNodesRealServer: a server with no
// peer feed (404) is followed Node by Node, as before.
func TestPeerWatcherWithoutFeedWatchesNodesRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	createNode(t, srv, "node-a")
	lw := &feedLW{countingLW: countingLW{Client: srv.NodeClient("node-a")}, noFeed: true}
	sink, clk := startPeerWatcher(t, lw)
	agenttest.Pump(t, clk, time.Second, "node-a from the Node watch", has(sink, "node-a"))
	if lw.lists.Load() != 1 || lw.dos.Load() != 1 {
		t.Errorf("%d feed requests and %d lists; want 1 of each", lw.dos.Load(), lw.lists.Load())
	}
}
