package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Group commit on SQLite.
//
// The writer's connection commits with synchronous=NORMAL: SQLite writes
// the transaction's frames into the write-ahead log and returns without
// an fsync (it still syncs the log's header when it starts the log over,
// and around checkpoints, so the file stays consistent). The logSyncer,
// a goroutine of its own, then syncs the log (fdatasync on its own
// descriptor of the same file) and only after that publishes the
// transaction to watchers and answers its callers. Meanwhile the writer
// applies the next transaction (small ones wait for the sync before
// them: syncAhead).
//
// Why: on a busy server each fsync cost the writer its core. A goroutine
// whose system call outlasts the scheduler's check comes back to the
// global run queue, behind every goroutine a fleet's requests make
// runnable; in a 10,000-agent placement that was about half of the
// writer's waits (docs/benchmarks.md). Now the syncer waits instead.
//
// What stays as before: a write is acknowledged only once it is on disk,
// and watchers hear of it only then (publish runs after the sync). Readers
// could see a committed transaction before its sync, in the database or
// the hot cache, so every read of an object checks its revision against
// the last one synced and waits for it (awaitDurable): nobody is shown a
// write that power loss could still take back. Writer tasks (compaction,
// leases, the copy) commit on the same connection and sync in the writer
// before they answer (runTask).
//
// If a sync fails, the kernel may already have dropped the pages it could
// not write, and a second sync would report success: the store takes no
// more writes (ErrSyncFailed) and the server has to be restarted, which
// recovers from what the log holds on disk.

// ErrSyncFailed is returned for writes once syncing the write-ahead log
// has failed: whether they reached the disk is unknown, and the store
// takes no more writes until it is opened again.
var ErrSyncFailed = errors.New("write-ahead log sync failed")

// syncAhead bounds the transactions committed and not yet answered when
// the writer begins a small one (fewer than syncAheadBatch writes): it
// applies one while the last is synced, and waits for that sync before
// it begins another, so the writes queued meanwhile share a transaction.
// Running ahead with small transactions made many of them, each
// rewriting the pages every commit touches: in process, 64 writers
// created 11,800-15,000 pods/s, against 18,500 with the fsync in the
// writer and 18,700-19,800 with this bound.
//
// A larger transaction does not wait: it carries the writes of a busy
// writer's backlog (a placement's 1,024 creates, a scheduler's binds, a
// fleet's status writes), which sharing would not make cheaper. In a
// placement, waiting for the sync made the writer wait for the syncer's
// turn on a core, 100-280 ms of each second.
const (
	syncAhead      = 2
	syncAheadBatch = 32
)

// syncQueue bounds the transactions committed and not yet synced: the
// writer waits when the syncer falls that far behind.
const syncQueue = 64

// slowSync is how long one sync may take before it is logged.
const slowSync = 500 * time.Millisecond

// synced is one committed transaction waiting for the log's sync.
type synced struct {
	base    int64
	changes []*change
	ops     []*op
}

type logSyncer struct {
	s     *Store
	path  string // the write-ahead log
	queue chan synced
	done  chan struct{} // closed when the syncer has answered everything queued

	fileMu sync.Mutex // the descriptor, shared with the writer's own syncs
	f      *os.File
	fi     os.FileInfo
	fsync  func(*os.File) error // fdatasync; tests replace it

	pending atomic.Int64 // transactions queued and not yet answered
	waits   atomic.Int64 // times the writer waited for its turn (awaitTurn)

	mu     sync.Mutex
	wake   chan struct{} // closed and replaced at each publish
	failed error         // the first sync failure; guarded by mu
}

func newLogSyncer(s *Store, dbPath string) *logSyncer {
	return &logSyncer{
		s:     s,
		path:  dbPath + "-wal",
		queue: make(chan synced, syncQueue),
		done:  make(chan struct{}),
		wake:  make(chan struct{}),
		fsync: fdatasync,
	}
}

func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// run syncs and answers the transactions queued, in order, until stop.
// One sync covers every transaction queued when it begins.
func (l *logSyncer) run() {
	defer close(l.done)
	group := make([]synced, 0, syncQueue)
	for first := range l.queue {
		group = append(group[:0], first)
	fill:
		for len(group) < cap(group) {
			select {
			case t, ok := <-l.queue:
				if !ok {
					break fill
				}
				group = append(group, t)
			default:
				break fill
			}
		}
		writes := 0
		for _, t := range group {
			writes += len(t.changes)
		}
		// Failed ops only need no sync of their own: answered after
		// the transactions before them.
		err := l.failure()
		if writes > 0 {
			start := time.Now()
			err = l.sync()
			took := time.Since(start)
			l.s.commitNanos.Add(took.Nanoseconds())
			if took >= slowSync {
				l.s.log.Warn("slow write-ahead log sync: answers and watchers waited", "transactions", len(group), "writes", writes, "took", took.Round(time.Millisecond))
			}
		}
		for i := range group {
			l.answer(group[i], err)
			group[i] = synced{}
		}
	}
}

// answer publishes t once synced, or fails its ops, and closes them.
func (l *logSyncer) answer(t synced, err error) {
	if err == nil {
		l.s.publishCommitted(t.base, t.changes)
	}
	for _, o := range t.ops {
		if err != nil && o.err == nil {
			o.err = err
			o.value, o.cur = nil, nil
		}
		close(o.done)
	}
	l.pending.Add(-1)
	l.mu.Lock()
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
}

// enqueue hands a committed transaction to the syncer.
func (l *logSyncer) enqueue(t synced) {
	l.pending.Add(1)
	l.queue <- t
}

// awaitTurn returns, before a transaction of n ops begins, once fewer
// than syncAhead transactions wait for their sync, or the sync has
// failed; at once for a large transaction (syncAheadBatch).
func (l *logSyncer) awaitTurn(n int) {
	if n >= syncAheadBatch {
		return
	}
	for l.pending.Load() >= syncAhead {
		wake := l.signal()
		if l.pending.Load() < syncAhead || l.failure() != nil {
			return
		}
		l.waits.Add(1)
		<-wake
	}
}

// stop answers what is queued and returns; the writer calls it as it
// exits, so nothing is queued after.
func (l *logSyncer) stop() {
	close(l.queue)
	<-l.done
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	if l.f != nil {
		l.f.Close() //nolint:errcheck // opened read-only, for fdatasync
		l.f = nil
	}
}

// sync makes everything written to the log so far durable. After one
// failure it fails every time.
func (l *logSyncer) sync() error {
	if err := l.failure(); err != nil {
		return err
	}
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	l.s.syncs.Add(1)
	err := l.syncLocked()
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrSyncFailed, err)
		l.mu.Lock()
		if l.failed == nil {
			l.failed = err
			l.s.log.Error("syncing the write-ahead log failed: the store takes no more writes; restart the server", "err", err)
		}
		l.mu.Unlock()
	}
	return err
}

// syncLocked syncs the log through a descriptor of its own, opened on
// first use and again if the log is no longer the file it was opened on
// (SQLite keeps one log file while any connection is open, so that is a
// safeguard): fdatasync writes out the file's pages whichever
// descriptor wrote them.
func (l *logSyncer) syncLocked() error {
	cur, err := os.Stat(l.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no log: every commit went to the database file, synced by SQLite
	}
	if err != nil {
		return err
	}
	if l.f == nil || !os.SameFile(l.fi, cur) {
		if l.f != nil {
			l.f.Close() //nolint:errcheck // replaced
		}
		l.f, l.fi = nil, nil
		f, err := os.Open(l.path)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close() //nolint:errcheck // failed
			return err
		}
		l.f, l.fi = f, fi
	}
	return l.fsync(l.f)
}

// failure returns the sync failure that stopped the store's writes.
func (l *logSyncer) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// signal returns a channel closed at the next publish.
func (l *logSyncer) signal() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wake
}

// awaitDurable returns once revision rev is synced and published, so that
// a read never shows a write that power loss could take back. It returns
// at once on PostgreSQL, whose commits are durable when they return, and
// for every revision already published: all but the few milliseconds
// after a commit.
func (s *Store) awaitDurable(ctx context.Context, rev int64) error {
	l := s.syncer
	if l == nil || rev <= s.rev.Load() {
		return nil
	}
	for {
		wake := l.signal()
		if rev <= s.rev.Load() {
			return nil
		}
		if err := l.failure(); err != nil {
			return err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			if rev <= s.rev.Load() {
				return nil
			}
			return ErrClosed
		}
	}
}
