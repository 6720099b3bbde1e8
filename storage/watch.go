package storage

import (
	"context"
	"fmt"
	"sync"

	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/api/labels"
)

// WatchOptions selects what a watch delivers.
type WatchOptions struct {
	// Namespace limits the watch to one namespace; "" watches all.
	Namespace string
	// Revision: deliver every change with a revision above it. 0 is a
	// revision like any other (the one an empty store's List reports), so
	// List then Watch from the list's revision never misses a change. A
	// revision below CompactedRevision fails with ErrCompacted.
	Revision int64
	// FromNow delivers only changes published after Watch is called;
	// Revision must then be 0.
	FromNow bool
	// Labels and Fields select objects; zero values select everything.
	// A change that makes an object start matching is delivered as Added,
	// one that makes it stop matching as Deleted.
	Labels labels.Selector
	Fields fields.Selector
}

// replayChunk is how many change-log rows one read transaction returns
// during a replay, so a slow consumer never pins a WAL snapshot for long.
const replayChunk = 512

// Watcher streams the changes of one resource. Its goroutine replays
// history first (from the in-memory ring or the change log) and then
// forwards live changes pushed by the writer. Methods are safe for
// concurrent use.
type Watcher struct {
	s        *Store
	resource string
	filter   filter
	from     int64 // deliver only revisions above it
	fromNow  bool  // register sets from to the last published revision
	replayTo int64 // revisions (from, replayTo] are read from the database
	backlog  []Event
	limit    int

	ctx    context.Context // the watch's lifetime: cancelled by Stop, fail or the caller
	cancel context.CancelFunc
	out    chan Event
	done   chan struct{}

	mu     sync.Mutex
	queue  []Event // live events not yet handed to the goroutine
	spare  []Event // owned by the goroutine between swaps
	notify chan struct{}
	ended  bool
	err    error
}

// Watch starts a watch on resource. The returned Watcher's Events channel
// delivers changes in strictly increasing revision order until ctx is
// done, Stop is called, the Store closes, or the consumer falls more than
// Options.WatchBuffer events behind (ErrTooSlow). It fails at once with
// ErrCompacted when opts.Revision is below CompactedRevision. The caller
// must read Events and end the watch (Stop or ctx) to release it.
func (s *Store) Watch(ctx context.Context, resource string, opts WatchOptions) (*Watcher, error) {
	info, err := s.lookup(resource)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	if !info.Namespaced && opts.Namespace != "" {
		return nil, fmt.Errorf("watch %s: %s are not namespaced: %w", resource, resource, ErrInvalid)
	}
	if opts.Revision < 0 {
		return nil, fmt.Errorf("watch %s: revision %d is negative: %w", resource, opts.Revision, ErrInvalid)
	}
	if opts.FromNow && opts.Revision != 0 {
		return nil, fmt.Errorf("watch %s: revision %d given with FromNow: %w", resource, opts.Revision, ErrInvalid)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watcher{
		s:        s,
		resource: info.Resource,
		filter:   filter{namespace: opts.Namespace, labels: opts.Labels, fields: opts.Fields},
		from:     opts.Revision,
		fromNow:  opts.FromNow,
		limit:    s.opts.WatchBuffer,
		ctx:      wctx,
		cancel:   cancel,
		out:      make(chan Event),
		done:     make(chan struct{}),
		notify:   make(chan struct{}, 1),
	}
	if err := s.bc.register(w, s.compacted.Load()); err != nil {
		cancel()
		return nil, fmt.Errorf("watch %s from revision %d: %w", resource, opts.Revision, err)
	}
	go w.run()
	return w, nil
}

// Events returns the channel of events. It is closed when the watch ends;
// Err then says why.
func (w *Watcher) Events() <-chan Event { return w.out }

// Err returns why the watch ended: nil after Stop or the caller's context
// ending, ErrCompacted, ErrTooSlow, ErrClosed, or a read error. It is
// meaningful once Events is closed.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch and waits for its goroutine to return. It is
// idempotent and may be called from any goroutine.
func (w *Watcher) Stop() {
	w.cancel()
	<-w.done
}

// offer queues c if the watcher selects it. It is called by the writer
// (under the broadcaster's lock) and never blocks; it returns false when
// the watcher has ended and should be forgotten.
func (w *Watcher) offer(c *change) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	if c.rev <= w.from {
		return true
	}
	t, ok, err := w.filter.eventFor(c)
	if err != nil {
		w.failLocked(err)
		return false
	}
	if !ok {
		return true
	}
	if len(w.queue) >= w.limit {
		w.failLocked(fmt.Errorf("fell %d events behind: %w", w.limit, ErrTooSlow))
		return false
	}
	w.queue = append(w.queue, Event{Type: t, Revision: c.rev, Value: c.value, c: c})
	select {
	case w.notify <- struct{}{}:
	default:
	}
	return true
}

// fail ends the watch with err unless it already ended.
func (w *Watcher) fail(err error) {
	w.mu.Lock()
	w.failLocked(err)
	w.mu.Unlock()
}

func (w *Watcher) failLocked(err error) {
	if w.ended {
		return
	}
	w.ended, w.err = true, err
	w.cancel()
}

// run is the watcher's goroutine: replay, then forward live events.
func (w *Watcher) run() {
	defer w.s.bc.wg.Done()
	defer close(w.done)
	defer close(w.out)
	defer w.s.bc.remove(w)
	defer w.cancel()
	if w.replayTo > w.from {
		if err := w.replay(); err != nil {
			if w.ctx.Err() == nil {
				w.fail(err)
			}
			return
		}
	}
	for _, ev := range w.backlog {
		if !w.send(ev) {
			return
		}
	}
	w.backlog = nil
	for {
		w.mu.Lock()
		q, ended := w.queue, w.ended
		w.queue = w.spare[:0]
		w.mu.Unlock()
		if ended {
			return
		}
		for _, ev := range q {
			if !w.send(ev) {
				return
			}
		}
		clear(q)
		w.spare = q
		select {
		case <-w.notify:
		case <-w.ctx.Done():
			return
		}
	}
}

func (w *Watcher) send(ev Event) bool {
	select {
	case w.out <- ev:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// replay delivers the changes in (from, replayTo] from the change log, a
// chunk per read transaction; each chunk checks, in the same snapshot,
// that compaction has not removed what it needs.
func (w *Watcher) replay() error {
	after := w.from
	for after < w.replayTo {
		// One chunk per admission, so long replays take turns.
		select {
		case w.s.replays <- struct{}{}:
		case <-w.ctx.Done():
			return w.ctx.Err()
		}
		cs, err := w.s.readChanges(w.ctx, w.resource, w.from, after, w.replayTo, replayChunk)
		<-w.s.replays
		if err != nil {
			return err
		}
		for _, c := range cs {
			t, ok, err := w.filter.eventFor(c)
			if err != nil {
				return err
			}
			if ok && !w.send(Event{Type: t, Revision: c.rev, Value: c.value, c: c}) {
				return w.ctx.Err()
			}
		}
		if len(cs) < replayChunk {
			return nil
		}
		after = cs[len(cs)-1].rev
	}
	return nil
}
