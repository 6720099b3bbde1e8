package storage

import (
	"runtime/metrics"
	"time"
)

// The store's writer is one goroutine, and every write waits for it; Go
// has no goroutine priorities. A goroutine that runs for 10 ms is
// preempted by the runtime and put at the back of the global run queue,
// behind every goroutine the network poller has readied meanwhile: on a
// fleet's server, hundreds. An execution trace of a 10,000-pod placement
// put two thirds of the writer's waits for a core after such preemptions
// (p50 40-55 ms each), while a transaction of 256 writes needs 10-20 ms
// of CPU (docs/benchmarks.md, "Fleet, round fourteen").
//
// So the writer gives up its core on its own, between two writes, before
// the runtime takes it: a short sleep parks it, the core runs the next
// goroutine in its own queue, and the expired timer readies the writer
// into that core's next slot. It is back after one other goroutine's
// turn, not after the whole queue. It yields only when some goroutine is
// waiting for a core: on an idle server the sleep would be a whole
// millisecond (the runtime's poller waits in milliseconds), for nothing.
const (
	// paceRun is how long the writer runs before it yields: well under
	// the runtime's 10 ms, as a goroutine readied into the next slot
	// inherits what is left of the slice before it.
	paceRun = 2 * time.Millisecond
	// paceSleep is the yield's sleep: any wait parks the writer; the
	// timer is checked each time its core picks a goroutine.
	paceSleep = 20 * time.Microsecond
)

// pacer tracks how long the writer has run since it last waited.
type pacer struct {
	now      func() time.Time // time.Now; fakes in tests
	sleep    func(time.Duration)
	runnable func() uint64 // goroutines waiting for a core
	since    time.Time     // the writer's run began
}

func newPacer() *pacer {
	return &pacer{now: time.Now, sleep: time.Sleep, runnable: runnableGoroutines()}
}

// runnableGoroutines reads the runtime's count of goroutines waiting for
// a core (it takes the scheduler's lock, so it is read only when a yield
// is due).
func runnableGoroutines() func() uint64 {
	sample := []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
	return func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 1 // unknown to this runtime: yield
		}
		return sample[0].Value.Uint64()
	}
}

// waited notes that the writer has just waited (for work, or in a
// yield): its run begins again.
func (p *pacer) waited() { p.since = p.now() }

// step is called between two writes: it yields when the writer has run
// for paceRun and another goroutine is waiting for a core.
func (p *pacer) step() {
	if p.now().Sub(p.since) < paceRun {
		return
	}
	if p.runnable() > 0 {
		p.sleep(paceSleep)
	}
	p.waited()
}
