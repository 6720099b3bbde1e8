package storage

import (
	"fmt"
	"sort"
	"sync"
)

// broadcaster fans committed changes out to watchers, in revision order,
// and keeps a ring of the most recent changes so that a watch resuming
// from a recent revision needs no database read. Only the writer calls
// publish; the writer never blocks on a watcher.
type broadcaster struct {
	mu       sync.Mutex
	rev      int64 // last published revision
	watchers map[string]map[*Watcher]struct{}
	ring     []*change // circular; ring[start] is the oldest of n
	start, n int
	// bytes is what the ring's changes hold (changeBytes); the oldest are
	// dropped to keep it within maxBytes (≤ 0: no bound), the newest
	// change always kept.
	bytes, maxBytes int64
	closed          bool
	closeErr        error

	// indexed holds the watchers selecting one spec.nodeName (fanout.go);
	// watchers, by resource, the others.
	indexed watchIndex

	// lastChange, when set, gives the revision of a resource's last
	// change (Store.ResourceRevision), noted before the change is
	// published; it knows every change after revision known (where the
	// history read at Open starts, seedwatch.go, or the end of a gap
	// skipTo jumped).
	lastChange func(resource string) int64
	known      int64

	wg sync.WaitGroup // one per running Events goroutine
}

func newBroadcaster(rev int64, ringSize int, maxBytes int64) *broadcaster {
	return &broadcaster{
		rev:      rev,
		known:    rev,
		watchers: make(map[string]map[*Watcher]struct{}),
		ring:     make([]*change, ringSize),
		maxBytes: maxBytes,
	}
}

// changeOverhead approximates what a change holds besides its byte
// slices: the struct, its key and the decoded label and field sets.
const changeOverhead = 512

// changeBytes is what c holds in memory, the decoded object a watcher may
// have attached excepted.
func changeBytes(c *change) int64 {
	return int64(changeOverhead + len(c.value) + len(c.rawLabels) + len(c.rawFields) + len(c.rawPrevLabels) + len(c.rawPrevFields))
}

// publish delivers cs (committed, in revision order) to every watcher of
// their resource and remembers them in the ring. A watcher that cannot
// take an event is cut off; publish itself never waits.
func (b *broadcaster) publish(cs []*change) {
	if len(cs) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range cs {
		b.pushLocked(c)
		b.fanOutLocked(c)
	}
	b.rev = cs[len(cs)-1].rev
}

func (b *broadcaster) pushLocked(c *change) {
	if len(b.ring) == 0 {
		return
	}
	if b.n == len(b.ring) {
		b.dropOldestLocked()
	}
	b.ring[(b.start+b.n)%len(b.ring)] = c
	b.n++
	b.bytes += changeBytes(c)
	for b.maxBytes > 0 && b.bytes > b.maxBytes && b.n > 1 {
		b.dropOldestLocked()
	}
}

// dropOldestLocked forgets the oldest change of the ring: watches from
// before it replay from the change log.
func (b *broadcaster) dropOldestLocked() {
	b.bytes -= changeBytes(b.ring[b.start])
	b.ring[b.start] = nil
	b.start = (b.start + 1) % len(b.ring)
	b.n--
}

// oldestLocked returns the revision of the oldest change in the ring, or
// the next revision when the ring is empty.
func (b *broadcaster) oldestLocked() int64 {
	if b.n == 0 {
		return b.rev + 1
	}
	return b.ring[b.start].rev
}

// register adds w, which wants every change of its resource after w.from
// (after the last published one when w.fromNow), and plans its replay: revisions
// (w.from, w.replayTo] come from the database, the rest of the history
// from the ring into w.backlog, and everything newer live.
func (b *broadcaster) register(w *Watcher, compacted int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return b.closeErr
	}
	if w.fromNow {
		w.from = b.rev
	}
	if w.from < compacted {
		return ErrCompacted
	}
	w.replayTo = w.from
	value, indexed := indexValue(w)
	if indexed {
		b.indexed.track(w.resource, b.rev)
	}
	if b.unchangedSinceLocked(w.resource, w.from) ||
		indexed && b.indexed.unchangedSince(w.resource, value, w.from) {
		// Nothing to replay, from the change log or the ring.
		b.addLocked(w)
		return nil
	}
	if oldest := b.oldestLocked(); w.from+1 < oldest {
		// An indexed watch (an agent's assignment stream) whose history
		// has left the ring is told to list again rather than replay the
		// change log: a replay reads every change of the resource since
		// w.from and keeps the node's few, so a fleet resuming together
		// after a busy minute (a server restarted right after a large
		// Deployment) read the same tens of thousands of rows once per
		// agent, for minutes. The agent's list reads its node's pods
		// through the node index instead.
		if indexed && len(b.ring) > 0 {
			return fmt.Errorf("revision %d is older than the %d changes kept in memory (the oldest is %d); an indexed watch lists again rather than replaying the change log: %w",
				w.from, b.n, oldest, ErrCompacted)
		}
		w.replayTo = oldest - 1
	}
	// The ring is in revision order: skip what the watcher has seen.
	first := sort.Search(b.n, func(i int) bool { return b.ring[(b.start+i)%len(b.ring)].rev > w.from })
	for i := first; i < b.n; i++ {
		c := b.ring[(b.start+i)%len(b.ring)]
		if c.key.resource != w.resource {
			continue
		}
		t, ok, err := w.filter.eventFor(c)
		if err != nil {
			return err
		}
		if ok {
			w.backlog = append(w.backlog, Event{Type: t, Revision: c.rev, Value: c.value, c: c})
		}
	}
	b.addLocked(w)
	return nil
}

// unchangedSinceLocked reports whether no object of resource changed
// after revision from, so a watch from there has nothing to replay
// however old from is. A fleet's Service and EndpointSlice watches,
// resumed together from the bookmark they last had while a large
// Deployment turned the ring over in two seconds, each read the change
// log from there (every change of every resource in the range, to keep
// none): 16 % of the server's CPU during the placement.
func (b *broadcaster) unchangedSinceLocked(resource string, from int64) bool {
	return b.lastChange != nil && from >= b.known && b.lastChange(resource) <= from
}

// track counts a watcher goroutine about to start in b.wg, so close waits
// for it; it returns false (not counted) once the broadcaster closed, when
// every watcher has already been ended.
func (b *broadcaster) track() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	return true
}

// warm fills the ring with cs, the newest entries of the change log read
// as the Store opens (in revision order, up to the revision b starts
// at), so that watches resumed after a restart replay from memory. The
// ring's bounds apply as to published changes.
func (b *broadcaster) warm(cs []*change) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range cs {
		b.pushLocked(c)
	}
}

// remove forgets w; it is idempotent.
func (b *broadcaster) remove(w *Watcher) {
	b.mu.Lock()
	delete(b.watchers[w.resource], w)
	b.indexed.remove(w)
	b.mu.Unlock()
}

// skipTo cuts off every watcher with err and forgets the ring: the
// revisions up to rev could not be read, and no watcher may be shown the
// gap. New watches from below rev replay from the change log.
func (b *broadcaster) skipTo(rev int64, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ws := range b.watchers {
		for w := range ws {
			w.fail(err)
		}
	}
	clear(b.watchers)
	b.indexed.failAll(err)
	clear(b.ring)
	b.start, b.n, b.bytes = 0, 0, 0
	b.rev = rev
	// The skipped changes were never noted: what lastChange says holds
	// only after them.
	b.known = max(b.known, rev)
}

// close ends every watcher with err, refuses new ones, and waits for their
// goroutines to return.
func (b *broadcaster) close(err error) {
	b.mu.Lock()
	if !b.closed {
		b.closed, b.closeErr = true, err
		for _, ws := range b.watchers {
			for w := range ws {
				w.fail(err)
			}
		}
		clear(b.watchers)
		b.indexed.failAll(err)
	}
	b.mu.Unlock()
	b.wg.Wait()
}
