package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// Following is what Follow hands on.
type Following struct {
	// Listed gets every list: the whole of the resource as of rev.
	Listed func(objs []api.Object, rev int64)
	// Changed gets every change after it, its object decoded, with
	// the change's revision. Consume, if set instead, gets the watch
	// itself and reads it to its end.
	Changed func(typ EventType, obj api.Object, rev int64)
	Consume func(w *Watcher)
	// Failed, if set, is told of every failure: a list, an object that
	// does not decode (skipped), a watch that could not start or ended
	// (those wrap ErrRelist).
	Failed func(err error)
	// Clock spaces the retries (nil: the wall clock).
	Clock clock.Clock
}

// Follow backs off 1 s after a failed list or watch, doubling to 30 s; a
// watch that opened resets it.
const (
	followRetry    = time.Second
	followMaxRetry = 30 * time.Second
)

// Follow lists resource and watches it from the list's revision, and
// lists again whenever the watch ends (its revision compacted away, a
// watcher too slow), as client-go's reflector does, until ctx ends.
// Every consumer of a whole resource kept in memory (an informer, the
// peer feed) follows it this way.
func (s *Store) Follow(ctx context.Context, resource string, f Following) {
	bo := backoff.Backoff{Min: followRetry, Max: followMaxRetry, Clock: clock.Or(f.Clock)}
	failed := func(err error) {
		if f.Failed != nil && ctx.Err() == nil {
			f.Failed(err)
		}
	}
	for ctx.Err() == nil {
		objs, rev, err := s.List(ctx, resource, ListOptions{})
		if err != nil {
			failed(fmt.Errorf("list %s: %w", resource, err))
			bo.BackOff(ctx, err)
			continue
		}
		f.Listed(objs, rev)
		w, err := s.Watch(ctx, resource, WatchOptions{Revision: rev, Buffer: InformerWatchBuffer})
		if err != nil {
			// Compacted between the list and the watch: list again.
			failed(fmt.Errorf("%w: watch %s from revision %d: %w", ErrRelist, resource, rev, err))
			bo.BackOff(ctx, err)
			continue
		}
		bo.Reset()
		if f.Consume != nil {
			f.Consume(w)
		} else {
			for ev := range w.Events() {
				obj, err := ev.Object()
				if err != nil {
					failed(fmt.Errorf("%s at revision %d does not decode; skipped: %w", resource, ev.Revision, err))
					continue
				}
				f.Changed(ev.Type, obj, ev.Revision)
			}
		}
		err = w.Err()
		w.Stop()
		if err == nil {
			failed(fmt.Errorf("%w: the watch of %s ended", ErrRelist, resource))
		} else {
			failed(fmt.Errorf("%w: the watch of %s ended: %w", ErrRelist, resource, err))
		}
	}
}

// ErrRelist wraps the failures of Follow a list follows at once: a watch
// that could not start (its revision compacted since the list) or that
// ended.
var ErrRelist = errors.New("listing again")
