package fleet

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// defaultHoldHeadroom is how much the simulator's memory may grow in a
// held phase before its collector runs anyway.
const defaultHoldHeadroom = 6 << 30

// ownGC is the simulator's collector held for a phase (holdOwn).
type ownGC struct {
	phase   string // the phase held, "" when none
	cycles  uint64 // the collector's cycles when it began
	held    bool
	percent int   // GOGC before the hold
	limit   int64 // the memory limit before the hold
}

// holdOwn keeps the simulator's collector from running during phase
// (Config.HoldOwnGC), unless the simulator's memory grows by
// Config.HoldHeadroom. The simulator's heap is 1.2-2 GB for 10,000
// agents, and one collection of it took 2.6 CPU-seconds of assists on
// the box's two cores, stalling every simulated agent at once: 10,000
// agent processes, each collecting its own few MB, never stall together.
// The collections that run anyway are counted and reported (releaseOwn).
func (r *run) holdOwn(phase string) {
	r.own = ownGC{phase: phase, cycles: ownCycles()}
	if !r.cfg.HoldOwnGC {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.own.held = true
	r.own.percent = debug.SetGCPercent(-1)
	r.own.limit = debug.SetMemoryLimit(int64(ms.Sys-ms.HeapReleased) + r.cfg.HoldHeadroom)
}

// releaseOwn ends holdOwn's phase: the collector's settings are restored,
// and the collections that ran in the phase are reported.
func (r *run) releaseOwn() {
	if r.own.phase == "" {
		return
	}
	if r.own.held {
		debug.SetGCPercent(r.own.percent)
		debug.SetMemoryLimit(r.own.limit)
	}
	how := "as it paced itself"
	if r.own.held {
		how = "held"
	}
	r.progress("the simulator's own collections during %s (%s): %d", r.own.phase, how, ownCycles()-r.own.cycles)
	r.own = ownGC{}
}

// ownCycles is how many collections the simulator has completed.
func ownCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
