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

// gatedRuntime's ListPods counts calls and blocks until released.
type gatedRuntime struct {
	*fake.Runtime
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func (g *gatedRuntime) ListPods(ctx context.Context) ([]runtime.PodStatus, error) {
	g.calls.Add(1)
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Runtime.ListPods(ctx)
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
