package status

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// trapClock is a fake clock whose timers call onStop (when set) after
// they are stopped: a test can act between a timer's Stop and its Reset.
type trapClock struct {
	*clock.Fake
	mu     sync.Mutex
	onStop func()
}

func (c *trapClock) NewTimer(d time.Duration) clock.Timer {
	return &trapTimer{Timer: c.Fake.NewTimer(d), c: c}
}

func (c *trapClock) trap(f func()) {
	c.mu.Lock()
	c.onStop = f
	c.mu.Unlock()
}

type trapTimer struct {
	clock.Timer
	c *trapClock
}

func (t *trapTimer) Stop() bool {
	was := t.Timer.Stop()
	t.c.mu.Lock()
	f := t.c.onStop
	t.c.onStop = nil
	t.c.mu.Unlock()
	if f != nil {
		f()
	}
	return was
}

// TestLateWakeKeepsTheArmedTimer: a wake that leaves the earliest due
// time as it was (a second status for a pod already waiting out its
// batch delay) leaves the timer alone. The loop re-armed it from a
// duration read before the clock moved: a test's fake clock advanced
// between the timer's Stop and its Reset pushed the write a whole batch
// delay past the clock, and the write never came (seen once in CI as
// "no sync round in 20s").
func TestLateWakeKeepsTheArmedTimer(t *testing.T) {
	srv := agenttest.StartServer(t)
	clk := &trapClock{Fake: clock.NewFake(time.Unix(1e9, 0))}
	rounds := make(chan struct{}, 10)
	m, err := New(Config{Client: srv.NodeClient("n1"), NodeName: "n1", Clock: clk, BatchDelay: batch, PhaseChangeDelay: batch, ResyncPeriod: resync,
		Backoff: backoff.Backoff{Min: retryMax / 4, Max: retryMax}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	m.afterSync = func() { rounds <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	pod := srv.CreatePod(agenttest.Pod("p", "n1"))
	m.SetPodStatus(pod, running("0"))
	clk.BlockUntil(2) // the resync ticker and the batch timer
	// The next wake: should the loop stop the timer, the clock moves on
	// by the batch delay before it is set again.
	stopped := make(chan struct{})
	clk.trap(func() {
		clk.Advance(batch)
		close(stopped)
	})
	m.SetPodStatus(pod, running("1"))
	select {
	case <-stopped:
		// The old loop: the clock has passed the due time already.
	case <-time.After(time.Second):
		clk.trap(nil)
		clk.Advance(batch)
	}
	select {
	case <-rounds:
	case <-time.After(10 * time.Second):
		t.Fatal("no write within 10 s of the batch delay passing")
	}
	if cur := srv.GetPod("default", "p"); cur.Status.Message != "1" {
		t.Errorf("server status message = %q; want the latest, \"1\"", cur.Status.Message)
	}
}
