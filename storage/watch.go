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
	// Buffer is how many undelivered events this watcher may hold before
	// it is cut off with ErrTooSlow; 0 is Options.WatchBuffer. The
	// server's own informers set it far higher: their consumer is in the
	// process, an event they hold is a pointer to a change the store
	// keeps anyway, and the relist a cut-off forces costs far more. In a
	// 10,000-pod placement the scheduler's and the controllers' pod
	// watches fell 1 024 events behind and relisted, and the placement
	// stood still for 8 s.
	Buffer int
}

// replayChunk is how many change-log rows one read transaction returns
// during a replay, so a slow consumer never pins a WAL snapshot for long.
const replayChunk = 512

// Watcher streams the changes of one resource: history first (from the
// in-memory ring or the change log), then live changes pushed by the
// writer. A consumer either pulls them with Next in its own goroutine,
// which costs no goroutine of the Watcher's (the API server's watch
// streams do), or receives them from Events, which starts a goroutine
// that pulls for it. Use one or the other, from one goroutine. Stop, Err,
// Done and Ready are safe for concurrent use.
type Watcher struct {
	s        *Store
	resource string
	filter   filter
	from     int64 // deliver only revisions above it
	fromNow  bool  // register sets from to the last published revision
	limit    int

	ctx    context.Context // the watch's lifetime: cancelled by Stop, fail or the caller
	cancel context.CancelFunc

	// The consumer's state, owned by the goroutine calling Next.
	replayTo    int64   // revisions (from, replayTo] are read from the database
	replayAfter int64   // the replay's position
	backlog     []Event // from the ring at register, after the replay
	cur         []Event // events being handed out, cur[next:] still due
	next        int

	mu     sync.Mutex
	queue  []Event // live events not yet taken by the consumer
	notify chan struct{}
	ended  bool
	err    error

	startOnce sync.Once
	out       chan Event    // Events' channel, made by the first Events call
	done      chan struct{} // closed when Events' goroutine returns
}

// Watch starts a watch on resource. Its events come in strictly
// increasing revision order, through Next or Events, until ctx is done,
// Stop is called, the Store closes, or the consumer falls more than
// Options.WatchBuffer events behind (ErrTooSlow). It fails at once with
// ErrCompacted when opts.Revision is below CompactedRevision. The caller
// must consume the events and end the watch (Stop or ctx) to release it.
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
	if opts.Buffer < 0 {
		return nil, fmt.Errorf("watch %s: buffer %d is negative: %w", resource, opts.Buffer, ErrInvalid)
	}
	limit := s.opts.WatchBuffer
	if opts.Buffer > 0 {
		limit = opts.Buffer
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watcher{
		s:        s,
		resource: info.Resource,
		filter:   filter{namespace: opts.Namespace, labels: opts.Labels, fields: opts.Fields},
		from:     opts.Revision,
		fromNow:  opts.FromNow,
		limit:    limit,
		ctx:      wctx,
		cancel:   cancel,
		notify:   make(chan struct{}, 1),
	}
	if err := s.bc.register(w, s.compacted.Load()); err != nil {
		cancel()
		return nil, fmt.Errorf("watch %s from revision %d: %w", resource, opts.Revision, err)
	}
	w.replayAfter = w.from
	return w, nil
}

// Events returns a channel of the events, fed by a goroutine the first
// call starts. It is closed when the watch ends; Err then says why. Do
// not mix it with Next.
func (w *Watcher) Events() <-chan Event {
	w.startOnce.Do(func() {
		w.out = make(chan Event)
		w.done = make(chan struct{})
		counted := w.s.bc.track()
		go w.run(counted)
	})
	return w.out
}

// Err returns why the watch ended: nil after Stop or the caller's context
// ending, ErrCompacted, ErrTooSlow, ErrClosed, or a read error. It is
// meaningful once Events is closed, or Done is and Next returns nothing.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Done is closed when the watch has ended (Stop, the caller's context,
// or a failure that Err reports).
func (w *Watcher) Done() <-chan struct{} { return w.ctx.Done() }

// Ready receives a value when live events may be waiting for Next, and
// when the watch failed (Done is closed then; Stop and the caller's
// context ending do not send).
func (w *Watcher) Ready() <-chan struct{} { return w.notify }

// Stop ends the watch and, if Events started its goroutine, waits for it
// to return. It is idempotent and may be called from any goroutine.
func (w *Watcher) Stop() {
	w.mu.Lock()
	if !w.ended {
		w.ended = true
	}
	w.mu.Unlock()
	w.cancel()
	w.s.bc.remove(w)
	w.startOnce.Do(func() { // Events after Stop: a closed channel, no goroutine
		w.out = make(chan Event)
		close(w.out)
	})
	if w.done != nil {
		<-w.done
	}
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
	if w.ctx.Err() != nil { // the caller's context ended
		w.failLocked(nil)
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
	// Ready too: a reader waiting on Ready alone learns of the end.
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// run is Events' goroutine: it pulls events and sends them on.
func (w *Watcher) run(counted bool) {
	if counted {
		defer w.s.bc.wg.Done()
	}
	defer close(w.done)
	defer close(w.out)
	defer w.s.bc.remove(w)
	defer w.cancel()
	for {
		ev, ok := w.Next()
		if ok {
			select {
			case w.out <- ev:
				continue
			case <-w.ctx.Done():
				return
			}
		}
		select {
		case <-w.notify:
		case <-w.ctx.Done():
			return
		}
	}
}
