package server

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// TestGCBurstFollowsTheWriteRate: the GOGC rises when the store's
// writes reach the threshold, stays up through a short lull, and comes
// back down after Calm below it.
func TestGCBurstFollowsTheWriteRate(t *testing.T) {
	var set []int
	cfg := GCBurst{Steady: 50, Percent: 100, Writes: 500, Calm: 3 * time.Second}
	released := 0
	g := newGCGovernor(cfg, nil, func(p int) int { set = append(set, p); return 0 }, func() { released++ }, nil, slog.New(slog.DiscardHandler))
	at := time.Unix(1e9, 0)
	g.lastAt = at
	var writes int64
	tick := func(perSecond int64) {
		at = at.Add(time.Second)
		writes += perSecond
		g.step(writes, at)
	}
	for _, r := range []int64{100, 300, 499} { // a fleet's steady writes, a join
		tick(r)
	}
	if len(set) != 0 || g.percent.Load() != 50 {
		t.Fatalf("below the threshold: GOGC set %v (now %d); want untouched at 50", set, g.percent.Load())
	}
	tick(2000) // a placement starts
	if len(set) != 1 || set[0] != 100 || g.percent.Load() != 100 || g.bursts.Load() != 1 {
		t.Fatalf("at 2,000 writes a second: GOGC set %v, %d bursts; want 100, once", set, g.bursts.Load())
	}
	tick(100) // a lull shorter than Calm
	tick(100)
	tick(1500)
	tick(10)
	tick(10)
	tick(10)
	if len(set) != 1 || released != 0 {
		t.Fatalf("a lull shorter than Calm: GOGC set %v, memory released %d times; want only the raise", set, released)
	}
	tick(10) // Calm (3 s) since the first calm tick
	if len(set) != 2 || set[1] != 50 || g.percent.Load() != 50 || released != 1 {
		t.Fatalf("after Calm below the threshold: GOGC set %v, memory released %d times; want back to 50, released once", set, released)
	}
	tick(5000)
	if g.bursts.Load() != 2 || g.percent.Load() != 100 {
		t.Fatalf("a second burst: %d bursts, GOGC %d; want 2, 100", g.bursts.Load(), g.percent.Load())
	}
	// A tick right after another (a late one, then one on time) counts
	// with the next: 2,000 writes in 10 ms is no burst.
	tick(10)
	tick(10)
	tick(10)
	tick(10) // calm since 4 s: back to 50
	if g.percent.Load() != 50 {
		t.Fatalf("GOGC %d after Calm; want 50", g.percent.Load())
	}
	g.step(writes+2000, at.Add(10*time.Millisecond))
	if g.percent.Load() != 50 || g.last != writes {
		t.Fatalf("2,000 writes 10 ms after a tick: GOGC %d; want 50, the writes left for the next tick", g.percent.Load())
	}
	at = at.Add(time.Second)
	writes += 2010
	g.step(writes, at)
	if g.percent.Load() != 100 {
		t.Fatalf("2,010 writes over the next second: GOGC %d; want 100", g.percent.Load())
	}
}

// TestGCBurstRunsOnTheClockAndRestoresOnExit: run reads the counter
// every tick of its clock, and a server stopping mid-burst leaves the
// steady GOGC set.
func TestGCBurstRunsOnTheClockAndRestoresOnExit(t *testing.T) {
	clk := clock.NewFake(time.Unix(1e9, 0))
	sets := make(chan int, 4)
	var writes int64
	counter := make(chan int64, 1)
	counter <- 0
	read := func() int64 { v := <-counter; counter <- v; return v }
	g := newGCGovernor(GCBurst{Steady: 50, Percent: 100, Writes: 500, Calm: time.Minute}, read,
		func(p int) int { sets <- p; return 0 }, func() {}, clk, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.run(ctx) }()
	clk.BlockUntil(1) // the ticker, made after run read its starting count
	writes = 10_000
	<-counter
	counter <- writes
	clk.Advance(time.Second)
	nextSet(t, sets, 100, "after a tick at 10,000 writes a second")
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("run = %v; want context.Canceled", err)
	}
	select {
	case p := <-sets:
		if p != 50 {
			t.Fatalf("on exit GOGC set to %d; want the steady 50", p)
		}
	default:
		t.Fatal("a run ended mid-burst left the raised GOGC")
	}
}

// TestGCBurstStartsOnAnnouncedBulk: a bulk write announced at or above
// the threshold starts the burst at once, with no tick of the clock; a
// smaller one changes nothing; the burst still ends after Calm without
// writes.
func TestGCBurstStartsOnAnnouncedBulk(t *testing.T) {
	clk := clock.NewFake(time.Unix(1e9, 0))
	sets := make(chan int, 4)
	reads := make(chan struct{}, 1) // a tick was taken: run read the counter
	read := func() int64 {
		select {
		case reads <- struct{}{}:
		default: // run's first read, before the ticker
		}
		return 0
	}
	g := newGCGovernor(GCBurst{Steady: 35, Percent: 100, Writes: 1000, Calm: 10 * time.Second}, read,
		func(p int) int { sets <- p; return 0 }, func() {}, clk, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.run(ctx) }()
	clk.BlockUntil(1)
	<-reads       // the starting count
	g.Expect(999) // below the threshold: not even queued
	if len(g.announced) != 0 {
		t.Fatal("an announcement of 999 writes was queued; the threshold is 1,000")
	}
	g.Expect(10_000)
	nextSet(t, sets, 100, "after 10,000 writes were announced, without a tick")
	if g.bursts.Load() != 1 {
		t.Fatalf("%d bursts after 10,000 writes were announced; want 1", g.bursts.Load())
	}
	g.Expect(10_000) // during the burst: nothing more
	// run takes the token and handles it before its next tick.
	for deadline := time.Now().Add(10 * time.Second); len(g.announced) > 0; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("run did not take the second announcement")
		}
	}
	for range 11 { // a tick a second, no writes: calm for Calm
		clk.Advance(time.Second)
		<-reads
	}
	nextSet(t, sets, 35, "after Calm without writes (the announced burst's end)")
	if g.bursts.Load() != 1 {
		t.Fatalf("%d bursts; want 1 (the second announcement came during the first)", g.bursts.Load())
	}
	cancel()
	<-done
}

// nextSet waits for the governor's next GOGC setting and checks it is
// want.
func nextSet(t *testing.T, sets <-chan int, want int, after string) {
	t.Helper()
	select {
	case p := <-sets:
		if p != want {
			t.Fatalf("GOGC set to %d %s; want %d", p, after, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("GOGC not set %s; want %d", after, want)
	}
}
