package scheduler

import (
	"context"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/events"
)

// effectQueueSize bounds the events and status writes waiting to be made.
// The store writes events only when its writer is idle or after 5 s
// (storage.LowPriority), so a burst's events wait here: a placement of
// 10,000 replicas queues one each. The buffer is 16,384 × 72 bytes.
const effectQueueSize = 16384

// maxEventBatch is the most events recorded with one batch: what a burst
// of binds queued while the last batch waited for the store's writer
// (16 transactions at the store's default MaxBatch).
const maxEventBatch = 4096

// batchRecorder is an EventRecorder that can record many events with one
// store batch; *events.Recorder is one.
type batchRecorder interface {
	Events(ctx context.Context, evs []events.Event)
}

// effect is a status write (fn) or, when fn is nil, an event.
type effect struct {
	fn func(ctx context.Context)
	ev events.Event
}

// effects runs events and status writes off the loop, in the order they
// were queued. Events queued together for a recorder that takes batches
// are recorded with one batch: one at a time, the events of a burst of
// binds (10 000 replicas placed at once) each waited for the store's
// writer, the queue filled, and four Scheduled events in five were
// dropped. When the queue is full new effects are dropped and counted,
// as Kubernetes' event broadcaster drops: the next attempt writes the
// status again.
type effects struct {
	ch      chan effect
	rec     EventRecorder // nil: no events
	dropped func()
}

func newEffects(rec EventRecorder, dropped func()) *effects {
	return &effects{ch: make(chan effect, effectQueueSize), rec: rec, dropped: dropped}
}

func (e *effects) run(ctx context.Context) {
	var taken []effect
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-e.ch:
			taken = append(taken[:0], f)
		}
	more:
		for len(taken) < maxEventBatch {
			select {
			case f := <-e.ch:
				taken = append(taken, f)
			default:
				break more
			}
		}
		e.apply(ctx, taken)
		clear(taken)
	}
}

// apply runs fs in order, each run of events as one batch when the
// recorder takes batches.
func (e *effects) apply(ctx context.Context, fs []effect) {
	for i := 0; i < len(fs); {
		if fs[i].fn != nil {
			fs[i].fn(ctx)
			i++
			continue
		}
		j := i + 1
		for j < len(fs) && fs[j].fn == nil {
			j++
		}
		if br, ok := e.rec.(batchRecorder); ok {
			evs := make([]events.Event, j-i)
			for k := range evs {
				evs[k] = fs[i+k].ev
			}
			br.Events(ctx, evs)
		} else {
			for _, f := range fs[i:j] {
				e.rec.Eventf(ctx, f.ev.Object, f.ev.Type, f.ev.Reason, "%s", f.ev.Message)
			}
		}
		i = j
	}
}

func (e *effects) put(f effect) {
	select {
	case e.ch <- f:
	default:
		e.dropped()
	}
}

func (e *effects) do(f func(ctx context.Context)) { e.put(effect{fn: f}) }

// event records an event about pod (shared with the watch: the recorder
// gets a shallow copy, as it may set the copy's TypeMeta).
func (e *effects) event(pod *api.Pod, typ, reason, msg string) {
	if e.rec == nil {
		return
	}
	c := *pod
	e.put(effect{ev: events.Event{Object: &c, Type: typ, Reason: reason, Message: msg}})
}
