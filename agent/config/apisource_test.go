package config

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

const testBackoffMax = 2 * time.Second

const testWatchTimeout = time.Hour

func startAPISource(t *testing.T, watcher PodWatcher) (*signalSink, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Unix(1e9, 0))
	sink := newSignalSink(t, SourceAPI)
	src, err := NewAPISource(APISourceConfig{Client: watcher, NodeName: "n1", Clock: clk, WatchTimeout: testWatchTimeout,
		Backoff: backoff.Backoff{Min: testBackoffMax / 4, Max: testBackoffMax}, Logger: quiet}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return sink, clk
}

func forceDelete(t *testing.T, srv *agenttest.Server, name string) {
	t.Helper()
	zero := int64(0)
	if err := srv.Admin.Delete(context.Background(), agenttest.Pods(), "default", name, client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
}

// TestAPISourceListAndWatchRealServer: the pods bound to the node arrive
// from the list (ADD), later ones from the watch; a graceful delete is a
// DELETE, the removal a REMOVE; other nodes' pods and mirror pods never
// arrive.
func TestAPISourceListAndWatchRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	srv.CreatePod(agenttest.Pod("before", "n1"))
	srv.CreatePod(agenttest.Pod("elsewhere", "n2"))
	sink, _ := startAPISource(t, srv.NodeClient("n1"))

	expectUpdate(t, sink.Merger, "ADD api before")
	if !sink.SeenAllSources() {
		t.Fatal("SeenAllSources() = false after the list")
	}
	mirror := agenttest.Pod("mirror", "n1")
	mirror.Annotations = map[string]string{api.MirrorPodAnnotation: "abc"}
	srv.CreatePod(mirror)
	srv.CreatePod(agenttest.Pod("after", "n1"))
	expectUpdate(t, sink.Merger, "ADD api after")

	if err := srv.Admin.Delete(context.Background(), agenttest.Pods(), "default", "after", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	u := expectUpdate(t, sink.Merger, "DELETE api after")
	if u.Pods[0].DeletionTimestamp == nil {
		t.Fatal("DELETE update without a deletionTimestamp")
	}
	forceDelete(t, srv, "after")
	expectUpdate(t, sink.Merger, "REMOVE api after")
	for _, p := range sink.Pods(SourceAPI) {
		if p.Name != "before" {
			t.Fatalf("the API source holds %s; want only before", p.Name)
		}
	}
}

// goneOnce is the real client, except that its first Watch from a given
// resourceVersion answers 410 Gone, as a server does once the version is
// compacted.
type goneOnce struct {
	*client.Client
	gone atomic.Bool
}

func (g *goneOnce) Watch(ctx context.Context, res api.ResourceInfo, ns string, opts client.WatchOptions) (*client.Watcher, error) {
	if opts.ResourceVersion != "" && g.gone.CompareAndSwap(false, true) {
		return nil, api.NewStatusError(http.StatusGone, api.StatusReasonExpired, "too old resource version")
	}
	return g.Client.Watch(ctx, res, ns, opts)
}

// TestAPISourceRelistsOnGoneRealServer: after a 410 the source lists
// again, and pods deleted meanwhile are REMOVEd by the new list.
func TestAPISourceRelistsOnGoneRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	srv.CreatePod(agenttest.Pod("a", "n1"))
	srv.CreatePod(agenttest.Pod("b", "n1"))
	w := &goneOnce{Client: srv.NodeClient("n1")}
	// The first list, then the watch that fails with 410 (after a
	// backoff, since the list was fresh) and the second list.
	sink, clk := startAPISource(t, w)
	expectUpdate(t, sink.Merger, "ADD api a,b")
	pumpUntil(t, clk, testBackoffMax, "the relist", func() bool { return sink.sets.Load() >= 2 })
	if !w.gone.Load() {
		t.Fatal("the watch never got its 410")
	}
	forceDelete(t, srv, "a")
	expectUpdate(t, sink.Merger, "REMOVE api a")
}

// TestAPISourceSurvivesServerRestartRealServer: while the server is down
// the source retries with backoff and sends nothing (no REMOVE); when the
// server is back on the same data dir it resumes the watch.
func TestAPISourceSurvivesServerRestartRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	srv.CreatePod(agenttest.Pod("a", "n1"))
	srv.CreatePod(agenttest.Pod("b", "n1"))
	sink, clk := startAPISource(t, srv.NodeClient("n1"))
	expectUpdate(t, sink.Merger, "ADD api a,b")

	srv.Stop()
	// Let the source fail against the dead server a few times.
	for i := 0; i < 5; i++ {
		clk.BlockUntil(1)
		clk.Advance(testBackoffMax)
	}
	clk.BlockUntil(1)
	if got := drain(sink.Merger); len(got) != 0 {
		t.Fatalf("while the server was down the source sent %q; want nothing", got)
	}
	if n := len(sink.Pods(SourceAPI)); n != 2 {
		t.Fatalf("while the server was down the API source holds %d pods; want 2", n)
	}

	srv.Start()
	forceDelete(t, srv, "b")
	srv.CreatePod(agenttest.Pod("c", "n1"))
	var got []string
	pumpUntil(t, clk, testBackoffMax, "updates after the restart", func() bool {
		select {
		case u := <-sink.Updates():
			got = append(got, describe(u)...)
		default:
		}
		return len(got) >= 2
	})
	if got[0] != "REMOVE api b" || got[1] != "ADD api c" {
		t.Fatalf("after the restart: %q; want REMOVE b, ADD c", got)
	}
}

// countingWatcher is the real client, counting its Watch calls.
type countingWatcher struct {
	*client.Client
	watches atomic.Int32
}

func (c *countingWatcher) Watch(ctx context.Context, res api.ResourceInfo, ns string, opts client.WatchOptions) (*client.Watcher, error) {
	c.watches.Add(1)
	return c.Client.Watch(ctx, res, ns, opts)
}

// TestAPISourceRotatesWatchRealServer: a watch is ended after its timeout
// and resumed from its resourceVersion, without a relist and without
// losing or repeating events.
func TestAPISourceRotatesWatchRealServer(t *testing.T) {
	srv := agenttest.StartServer(t)
	srv.CreatePod(agenttest.Pod("a", "n1"))
	w := &countingWatcher{Client: srv.NodeClient("n1")}
	sink, clk := startAPISource(t, w)
	expectUpdate(t, sink.Merger, "ADD api a")
	agenttest.Eventually(t, "the first watch", func() bool { return w.watches.Load() == 1 })
	clk.BlockUntil(1) // the watch's timeout
	clk.Advance(testWatchTimeout * 3 / 2)
	agenttest.Eventually(t, "the second watch", func() bool { return w.watches.Load() == 2 })
	srv.CreatePod(agenttest.Pod("b", "n1"))
	expectUpdate(t, sink.Merger, "ADD api b")
	if n := sink.sets.Load(); n != 1 {
		t.Fatalf("the source set its whole state %d times; want 1 (no relist)", n)
	}
	if got := drain(sink.Merger); len(got) != 0 {
		t.Fatalf("extra updates %q", got)
	}
}

// startResyncSource runs an API source for node n1 against a real
// server holding pod a, until a is handed over and the first watch is
// open; the source's clock is fake.
func startResyncSource(t *testing.T) (*agenttest.Server, *countingWatcher, *clock.Fake, *signalSink, *APISource) {
	t.Helper()
	srv := agenttest.StartServer(t)
	srv.CreatePod(agenttest.Pod("a", "n1"))
	w := &countingWatcher{Client: srv.NodeClient("n1")}
	clk := clock.NewFake(time.Unix(1e9, 0))
	sink := newSignalSink(t, SourceAPI)
	src, err := NewAPISource(APISourceConfig{Client: w, NodeName: "n1", Clock: clk, WatchTimeout: testWatchTimeout,
		Backoff: backoff.Backoff{Min: testBackoffMax / 4, Max: testBackoffMax}, Logger: quiet}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	expectUpdate(t, sink.Merger, "ADD api a")
	agenttest.Eventually(t, "the first watch", func() bool { return w.watches.Load() == 1 })
	return srv, w, clk, sink, src
}

// TestAPISourceResyncResumesAtOnceRealServer: Resync drops the live
// watch and watches again from its last revision without waiting on the
// clock (the agent calls it when the server is heard from again after a
// silence, as after a healed link whose watch connection died without a
// word), and without listing again: after a server restart every agent
// whose heartbeat was refused resyncs, and 10,000 lists at once were
// 12,966 answered 429. What changed meanwhile still arrives.
func TestAPISourceResyncResumesAtOnceRealServer(t *testing.T) {
	srv, w, clk, sink, src := startResyncSource(t)
	srv.CreatePod(agenttest.Pod("b", "n1"))
	expectUpdate(t, sink.Merger, "ADD api b")
	src.Resync(clk.Now()) // a silence since the watch started
	agenttest.Eventually(t, "a second watch", func() bool { return w.watches.Load() == 2 })
	srv.CreatePod(agenttest.Pod("c", "n1"))
	expectUpdate(t, sink.Merger, "ADD api c")
	if n := sink.sets.Load(); n != 1 {
		t.Fatalf("%d lists after the resync; want the first only (the watch resumed)", n)
	}
	if got := drain(sink.Merger); len(got) != 0 {
		t.Fatalf("extra updates after the resync %q; want none (b not handed over again)", got)
	}
}

// TestAPISourceResyncKeepsAStreamOpenedSinceRealServer: a Resync whose
// silence began before the live watch's stream was accepted leaves the
// watch alone (after a server restart the stream was opened again
// already; dropping it opened every agent's stream twice), and one whose
// silence began after drops it.
func TestAPISourceResyncKeepsAStreamOpenedSinceRealServer(t *testing.T) {
	srv, w, clk, sink, src := startResyncSource(t)
	// The watch is live once an event of it arrived.
	srv.CreatePod(agenttest.Pod("b", "n1"))
	expectUpdate(t, sink.Merger, "ADD api b")

	src.Resync(clk.Now().Add(-time.Second)) // began before the stream
	srv.CreatePod(agenttest.Pod("c", "n1"))
	expectUpdate(t, sink.Merger, "ADD api c")
	if n := w.watches.Load(); n != 1 {
		t.Fatalf("%d watches after a Resync older than the stream; want the first only", n)
	}

	clk.Advance(time.Millisecond)
	src.Resync(clk.Now()) // began after it
	agenttest.Eventually(t, "a second watch", func() bool { return w.watches.Load() == 2 })
	srv.CreatePod(agenttest.Pod("d", "n1"))
	expectUpdate(t, sink.Merger, "ADD api d")
	if n := sink.sets.Load(); n != 1 {
		t.Fatalf("%d lists; want the first only", n)
	}
}
