package server

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// GCBurst lets the collector's heap grow further (runtime/debug's
// SetGCPercent) while the store writes in bulk, and brings it back once
// the writes calm down.
//
// Why: the server's steady GOGC is low (cmd/skiff's 35) so that a fleet
// of 10,000 agents, whose connections are most of the live heap, stays
// near 1 GiB. During a placement (10,000 pods created, bound and
// reported Running in half a minute) that same setting made the
// collector a third of the server's CPU, on the cores the writer and the
// scheduler needed: a cycle every 6 s, each 2 CPU-seconds of marking the
// agents' heap and stacks. At GOGC 100 throughout, the placement bound
// its 10,000 pods in 10.2 s rather than 12.8 s, and the server held
// 1,292 MiB rather than 1,013 MiB once the fleet had joined. Raised only
// while the store writes at least Writes changes a second (or from when
// a controller announces that many creates at once: Expect), the headroom
// is spent on the burst and given back after it; a soft memory limit
// (--memory-limit) still bounds the heap either way.
type GCBurst struct {
	// Steady is the GOGC outside a burst, Percent the GOGC during one;
	// Percent 0 turns the governor off.
	Steady, Percent int
	// Writes is the store's writes a second from which a burst starts.
	Writes int64
	// Calm is how long the writes must stay below Writes before the
	// steady GOGC returns.
	Calm time.Duration
}

// gcGovernor applies a GCBurst from the store's write counter, read
// once a tick.
type gcGovernor struct {
	cfg    GCBurst
	writes func() int64          // the store's writes so far
	set    func(percent int) int // debug.SetGCPercent
	// release returns the burst's headroom to the system at its end
	// (debug.FreeOSMemory).
	release func()
	clk     clock.Clock
	log     *slog.Logger
	tick    time.Duration

	// The state step keeps (one goroutine: run's).
	last      int64
	lastAt    time.Time
	burst     bool
	calmSince time.Time

	percent atomic.Int64 // the GOGC last set, for the metrics
	bursts  atomic.Int64 // bursts begun

	// announced holds a token once a bulk write was announced (Expect)
	// and run has not yet started its burst.
	announced chan struct{}
}

func newGCGovernor(cfg GCBurst, writes func() int64, set func(int) int, release func(), clk clock.Clock, log *slog.Logger) *gcGovernor {
	g := &gcGovernor{cfg: cfg, writes: writes, set: set, release: release, clk: clk, log: log, tick: time.Second,
		announced: make(chan struct{}, 1)}
	g.percent.Store(int64(cfg.Steady))
	return g
}

// run follows the write rate until ctx ends, and leaves the steady GOGC
// set.
func (g *gcGovernor) run(ctx context.Context) error {
	// The count to measure from is read before the ticker exists: a
	// caller that sees the ticker (a test's fake clock) sees it read.
	g.last, g.lastAt = g.writes(), g.clk.Now()
	t := g.clk.NewTicker(g.tick)
	defer t.Stop()
	defer func() {
		if g.burst {
			g.apply(g.cfg.Steady)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
			g.step(g.writes(), g.clk.Now())
		case <-g.announced:
			g.start("bulk write announced")
		}
	}
}

// Expect announces n writes about to be made at once (a controller
// creating n pods). When n alone reaches the threshold, the burst starts
// now rather than at the next tick: at the steady GOGC the heap's next
// collection is often less than a second of a placement's allocation
// away, and one collection that starts before the tick marks the whole
// heap at the steady pace (round thirty-two's S, docs/benchmarks.md).
// The burst then ends as any does, after Calm below the threshold.
func (g *gcGovernor) Expect(n int) {
	if int64(n) < g.cfg.Writes {
		return
	}
	select {
	case g.announced <- struct{}{}:
	default: // one is already waiting for run
	}
}

// step takes the store's write count at time at: a rate at or above
// the threshold starts a burst (or keeps it on); a burst ends once the
// rate has stayed below it for Calm.
func (g *gcGovernor) step(writes int64, at time.Time) {
	elapsed := at.Sub(g.lastAt)
	if elapsed < g.tick/2 {
		// A tick delivered late and the next on time: a rate over a
		// few milliseconds says nothing (a fleet measured 396,825
		// writes a second that way). It counts with the next.
		return
	}
	rate := float64(writes-g.last) / elapsed.Seconds()
	g.last, g.lastAt = writes, at
	switch {
	case rate >= float64(g.cfg.Writes):
		g.start("store writing in bulk", "writes_per_second", int64(rate))
	case !g.burst:
	case g.calmSince.IsZero():
		g.calmSince = at
	case at.Sub(g.calmSince) >= g.cfg.Calm:
		g.burst, g.calmSince = false, time.Time{}
		g.apply(g.cfg.Steady)
		// The pages the burst's heap grew into stay resident until the
		// runtime's scavenger returns them, at its slow pace: a fleet's
		// server still held 1,461 MiB a minute and a half after a
		// burst, where it holds about 1,040 MiB steady. One collection
		// and their release now.
		g.release()
		g.log.Info("store writes calm again: the collector's steady pace returns", "writes_per_second", int64(rate), "gc_percent", g.cfg.Steady)
	}
}

// start starts a burst, or keeps the one on from calming down.
func (g *gcGovernor) start(why string, attrs ...any) {
	g.calmSince = time.Time{}
	if g.burst {
		return
	}
	g.burst = true
	g.bursts.Add(1)
	g.apply(g.cfg.Percent)
	g.log.Info(why+": the collector's heap may grow further", append(attrs, "gc_percent", g.cfg.Percent)...)
}

func (g *gcGovernor) apply(percent int) {
	g.set(percent)
	g.percent.Store(int64(percent))
}

// expectBulk passes a controller's announcement of n writes at once to
// the governor, if there is one (controllers.Config.Bulk).
func (s *server) expectBulk(n int) {
	if s.gov != nil {
		s.gov.Expect(n)
	}
}
