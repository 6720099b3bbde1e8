package events

import (
	"context"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// Event is one event for Recorder.Events: what Eventf takes, without the
// formatting.
type Event struct {
	Object                api.Object
	Type, Reason, Message string
}

// Events records evs (each as Eventf would), storing the new ones with
// one store batch, so a component with a backlog (the scheduler after a
// burst of binds) waits for the store's writer once, not once an event.
// Failures are logged, not returned.
func (r *Recorder) Events(ctx context.Context, evs []Event) {
	batch := make([]*api.Event, 0, len(evs))
	for _, e := range evs {
		ev := r.newEvent(e.Object, e.Type, e.Reason, e.Message)
		if errs := api.Validate(ev); len(errs) > 0 {
			r.sink.log.Warn("dropping invalid event", "reason", e.Reason, "err", errs)
			continue
		}
		batch = append(batch, ev)
	}
	for i, err := range r.sink.RecordBatch(ctx, batch) {
		if err != nil && ctx.Err() == nil {
			r.sink.log.Warn("recording event failed", "reason", batch[i].Reason, "object", batch[i].InvolvedObject.Name, "err", err)
		}
	}
}

// RecordBatch is Record for several events: the ones that repeat no event
// still alive (nor one before them in evs) are created with one
// Store.CreateBatch; the rest are folded into the stored event one by one,
// as Record folds them. errs has one entry per event, nil when it was
// recorded.
func (s *Sink) RecordBatch(ctx context.Context, evs []*api.Event) (errs []error) {
	errs = make([]error, len(evs))
	now := s.clock.Now()
	var fresh []api.Object
	var freshAt, rest []int
	seen := make(map[key]bool, len(evs))
	s.mu.Lock()
	for i, ev := range evs {
		fillTimes(ev, now)
		k := keyOf(ev)
		if _, alive := s.aliveLocked(k, ev, now); seen[k] || alive {
			rest = append(rest, i)
			continue
		}
		seen[k] = true
		fresh, freshAt = append(fresh, ev), append(freshAt, i)
	}
	s.mu.Unlock()
	if len(fresh) > 0 {
		// Events wait behind the single writes: a placement's binds,
		// which the scheduler's events follow, go first.
		for j, err := range s.store.CreateBatch(storage.LowPriority(ctx), fresh) {
			i := freshAt[j]
			if errs[i] = err; err == nil {
				ev := evs[i]
				s.remember(keyOf(ev), entry{namespace: ev.Namespace, name: ev.Name, lastSeen: now})
			}
		}
	}
	for _, i := range rest {
		_, _, errs[i] = s.Record(ctx, evs[i])
	}
	return errs
}
