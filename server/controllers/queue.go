package controllers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/promtext"
)

// Backoff bounds of Queue.AddRateLimited.
const (
	baseRetryDelay = 5 * time.Millisecond
	maxRetryDelay  = 5 * time.Minute
)

// Queue is a work queue keyed by object key, as client-go's: a key is
// queued at most once however often it is added; a key being processed
// is not handed to another worker, and if it is added meanwhile it is
// queued again when Done is called. Delayed adds (AddAfter,
// AddRateLimited) wait on the Clock. Safe for concurrent use.
type Queue struct {
	clk clock.Clock

	mu         sync.Mutex
	order      []string
	queued     map[string]bool
	processing map[string]bool
	dirty      map[string]bool      // added while processing
	waiting    map[string]time.Time // delayed adds: key → when
	due        dueHeap              // waiting's entries by time, and stale ones
	failures   map[string]int
	queuedAt   map[string]time.Time // when each ready key was queued
	wake       chan struct{}        // closed and replaced on a change while a Get waits on it
	armed      bool                 // a Get took wake since it was made

	adds, retries atomic.Uint64
	wait, work    *promtext.Hist
}

// QueueMetrics are one controller queue's figures for /metrics.
type QueueMetrics struct {
	Name          string
	Depth         int    // keys ready (not delayed, not in process)
	Adds, Retries uint64 // keys newly queued; failed keys queued again
	Wait, Work    promtext.Snapshot
}

// metrics returns q's figures under name.
func (q *Queue) metrics(name string) QueueMetrics {
	q.mu.Lock()
	depth := len(q.order)
	q.mu.Unlock()
	return QueueMetrics{Name: name, Depth: depth, Adds: q.adds.Load(), Retries: q.retries.Load(), Wait: q.wait.Snapshot(), Work: q.work.Snapshot()}
}

// NewQueue returns an empty queue on clk.
func NewQueue(clk clock.Clock) *Queue {
	return &Queue{
		clk: clock.Or(clk), queued: map[string]bool{}, processing: map[string]bool{}, dirty: map[string]bool{},
		waiting: map[string]time.Time{}, failures: map[string]int{}, queuedAt: map[string]time.Time{}, wake: make(chan struct{}),
		wait: promtext.NewHist(promtext.LatencyBounds), work: promtext.NewHist(promtext.LatencyBounds),
	}
}

// Add queues key now.
func (q *Queue) Add(key string) {
	q.mu.Lock()
	q.addLocked(key)
	q.mu.Unlock()
}

func (q *Queue) addLocked(key string) {
	delete(q.waiting, key)
	switch {
	case q.processing[key]:
		q.dirty[key] = true
	case !q.queued[key]:
		q.enqueueLocked(key)
	}
	q.signalLocked()
}

// enqueueLocked puts key, not queued, at the back.
func (q *Queue) enqueueLocked(key string) {
	q.queued[key] = true
	q.order = append(q.order, key)
	q.queuedAt[key] = q.clk.Now()
	q.adds.Add(1)
}

// signalLocked wakes the Gets waiting on a change. With none waiting
// it does nothing: a Get looks at the queue under the lock before it
// waits. Making a channel on every add was a steady 10 000-node server's
// largest allocation of its own (node lifecycle queues each node it
// looks at again for its next deadline).
func (q *Queue) signalLocked() {
	if !q.armed {
		return
	}
	close(q.wake)
	q.wake = make(chan struct{})
	q.armed = false
}

// AddAfter queues key once d has passed; an earlier pending delayed add
// of the same key wins.
func (q *Queue) AddAfter(key string, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	q.AddAt(key, q.clk.Now().Add(d))
}

// AddAt queues key once the clock reaches at (at once when it has); an
// earlier pending delayed add of the same key wins. A reconcile that
// computed "next due in d" from the time it read asks for that time, not
// for d from whenever it finished: with a stepped clock the two differ.
func (q *Queue) AddAt(key string, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !at.After(q.clk.Now()) {
		q.addLocked(key)
		return
	}
	if t, ok := q.waiting[key]; ok && !at.Before(t) {
		return
	}
	q.waiting[key] = at
	q.due.push(key, at, q.waiting)
	q.signalLocked()
}

// AddRateLimited queues key after a delay that doubles with each
// failure since the last Forget.
func (q *Queue) AddRateLimited(key string) {
	q.mu.Lock()
	n := q.failures[key]
	q.failures[key] = n + 1
	q.mu.Unlock()
	q.retries.Add(1)
	d := baseRetryDelay << min(n, 30)
	q.AddAfter(key, min(d, maxRetryDelay))
}

// Forget resets key's failure count.
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	delete(q.failures, key)
	q.mu.Unlock()
}

// promoteLocked queues every delayed key that is due at now and returns
// when the next one is due (zero if none). It looks only at the due ones
// (a heap), not at every delayed key: a controller may hold one per node.
func (q *Queue) promoteLocked(now time.Time) time.Time {
	for {
		k, t, ok := q.due.peek(q.waiting)
		if !ok {
			return time.Time{}
		}
		if t.After(now) {
			return t
		}
		q.due.pop()
		delete(q.waiting, k)
		if q.processing[k] {
			q.dirty[k] = true
		} else if !q.queued[k] {
			q.enqueueLocked(k)
		}
	}
}

// TryGet returns a key ready at the clock's now without waiting; the
// caller must call Done with it.
func (q *Queue) TryGet() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.promoteLocked(q.clk.Now())
	return q.popLocked()
}

func (q *Queue) popLocked() (string, bool) {
	if len(q.order) == 0 {
		return "", false
	}
	k := q.order[0]
	q.order[0] = ""
	q.order = q.order[1:]
	delete(q.queued, k)
	q.processing[k] = true
	if at, ok := q.queuedAt[k]; ok {
		q.wait.Observe(q.clk.Now().Sub(at).Seconds())
		delete(q.queuedAt, k)
	}
	return k, true
}

// Get waits for a key until ctx ends (ok false); the caller must call
// Done with it.
func (q *Queue) Get(ctx context.Context) (key string, ok bool) {
	for {
		q.mu.Lock()
		next := q.promoteLocked(q.clk.Now())
		if k, ok := q.popLocked(); ok {
			q.mu.Unlock()
			return k, true
		}
		wake := q.wake
		q.armed = true
		q.mu.Unlock()
		var timeout <-chan time.Time
		var t clock.Timer
		if !next.IsZero() {
			t = q.clk.NewTimer(next.Sub(q.clk.Now()))
			timeout = t.C()
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-timeout:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return "", false
		}
	}
}

// Done marks key processed; if it was added meanwhile it is queued again.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if q.dirty[key] {
		delete(q.dirty, key)
		q.addLocked(key)
	}
}

// Len returns how many keys are ready or being processed.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.order) + len(q.processing)
}

// NextDelayed returns when the earliest delayed key is due.
func (q *Queue) NextDelayed() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, next, ok := q.due.peek(q.waiting)
	return next, ok
}
