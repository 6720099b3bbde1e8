package kubelet

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/internal/clock"
)

// gatedRuntime's ListPods counts calls, lists, and blocks until released
// before it returns that listing.
type gatedRuntime struct {
	*fake.Runtime
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *gatedRuntime) ListPods(ctx context.Context) ([]runtime.PodStatus, error) {
	g.calls.Add(1)
	l, err := g.Runtime.ListPods(ctx)
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return l, err
}

// TestRelistCoalesces: callers that arrive while a relist runs share
// the next one — a burst of syncs costs two listings, not one each — and
// each returns only after a listing that started after its call.
func TestRelistCoalesces(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g := &gatedRuntime{Runtime: fake.New(clk), entered: make(chan struct{}, 16), release: make(chan struct{})}
	p := newPLEG(g, clk, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- p.relist(ctx) }()
	<-g.entered // the first listing runs
	const n = 10
	var wg sync.WaitGroup
	var returned atomic.Int32
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.relist(ctx); err != nil {
				t.Error(err)
			}
			returned.Add(1)
		}()
	}
	// Let the waiters queue up behind the running listing.
	for p.waiters() < n {
		time.Sleep(time.Millisecond)
	}
	g.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	<-g.entered // one second listing for all ten
	if r := returned.Load(); r != 0 {
		t.Fatalf("%d callers returned on a listing that started before their call", r)
	}
	g.release <- struct{}{}
	wg.Wait()
	if c := g.calls.Load(); c != 2 {
		t.Errorf("ListPods called %d times for 11 relists; want 2", c)
	}
	// A waiter whose ctx ends stops waiting.
	go func() { first <- p.relist(ctx) }()
	<-g.entered
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.relist(cctx); err == nil {
		t.Error("relist with a cancelled ctx = nil; want its error")
	}
	g.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// TestFreshReadsOnePodAndOutranksOlderRelists: fresh reads only its pod
// (no listing of every pod), emits that pod's events, and a relist that
// began before it cannot put back the older view it listed.
func TestFreshReadsOnePodAndOutranksOlderRelists(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	g := &gatedRuntime{Runtime: rt, entered: make(chan struct{}, 16), release: make(chan struct{})}
	p := newPLEG(g, clk, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	for _, uid := range []string{"a", "b"} {
		if _, err := rt.CreateSandbox(ctx, runtime.SandboxConfig{PodUID: uid, PodName: uid, Namespace: "default"}); err != nil {
			t.Fatal(err)
		}
	}
	id, err := rt.CreateContainer(ctx, runtime.ContainerConfig{PodUID: "a", PodName: "a", Namespace: "default", Name: "c", Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	// A relist begins and lists the container as created…
	done := make(chan error, 1)
	go func() { done <- p.relist(ctx) }()
	<-g.entered
	// …then the container starts and the sync loop reads its pod afresh.
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	ps, err := p.fresh(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if ps == nil || len(ps.Containers) != 1 || ps.Containers[0].State != runtime.StateRunning {
		t.Fatalf("fresh(a) = %+v; want its one container running", ps)
	}
	if n := g.calls.Load(); n != 1 {
		t.Fatalf("ListPods called %d times; want only the relist's (fresh reads one pod)", n)
	}
	if n := rt.CallCount(fake.MethodPodStatus, "a"); n != 1 {
		t.Fatalf("PodStatus(a) called %d times; want 1", n)
	}
	var started bool
	for len(p.events) > 0 {
		if e := <-p.events; e.PodUID == "a" && e.Type == ContainerStarted && e.Data == id {
			started = true
		} else if e.PodUID != "a" {
			t.Fatalf("fresh(a) emitted %+v for another pod", e)
		}
	}
	if !started {
		t.Fatal("fresh(a) did not emit ContainerStarted")
	}
	// The relist ends with what it listed before the start: the cache
	// keeps the newer view of a, and takes b.
	g.release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := p.get("a"); got == nil || got.Containers[0].State != runtime.StateRunning {
		t.Fatalf("cached a = %+v after an older relist; want running", got)
	}
	if p.get("b") == nil {
		t.Fatal("the relist's view of b is missing")
	}
}
