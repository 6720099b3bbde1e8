package storage

import (
	"fmt"
	"os"
	"sync/atomic"
)

// heldLogLimit bounds the write-ahead log while checkpoints are held: past
// it the hold ends and the log is copied into the database, however long
// the burst goes on. A fleet's 10,000-pod placement writes about 14 KB of
// log a pod (its create, bind and status), so 256 MiB holds the whole of
// one; a server that never writes 1,000 changes a second never holds.
var heldLogLimit int64 = 256 << 20

// autoCheckpointPages is SQLite's wal_autocheckpoint, which the writer's
// connection has outside a hold: a commit that leaves more pages than this
// in the log copies them into the database.
const autoCheckpointPages = 1000

// ckptHold is the writer's side of HoldCheckpoints.
type ckptHold struct {
	want atomic.Bool // HoldCheckpoints' last word; the writer clears it at the limit
	held bool        // the writer's connection has wal_autocheckpoint 0 (the writer's own)
	// now wakes maintainLoop to checkpoint once a hold ends.
	now chan struct{}
	// holds counts holds begun, for the metrics.
	holds atomic.Int64
}

// HoldCheckpoints stops (hold true) or resumes (false) the copying of the
// write-ahead log into the database while the store writes in bulk.
//
// Why: in a placement the writer is the serial stage, and on SQLite every
// 1,000 pages of log its commit also copied them into the database and
// synced it. Held, a placement's commits only append to the log; in
// process, a placement's writes took 12 % less CPU and went 13 % faster
// (BenchmarkSQLitePlacement, docs/benchmarks.md round thirty-eight). The
// copy is done once the hold ends, by a checkpoint beside the writer, and
// the log is bounded meanwhile (heldLogLimit), as it is if a commit fails
// (a full disk). Reads are unaffected: they find the pages in the log.
//
// It returns at once; the writer applies it before its next transaction.
// On PostgreSQL it does nothing.
func (s *Store) HoldCheckpoints(hold bool) {
	if s.path == "" {
		return
	}
	s.hold.want.Store(hold)
}

// CheckpointHolds is how many holds have begun since Open.
func (s *Store) CheckpointHolds() int64 { return s.hold.holds.Load() }

// applyHold brings the writer's connection to what HoldCheckpoints asked,
// before a transaction. The writer's goroutine only.
func (s *Store) applyHold() {
	if s.path == "" || s.hold.want.Load() == s.hold.held || s.w.conn == nil {
		return
	}
	s.setHold(s.hold.want.Load())
}

// setHold sets the writer's connection's automatic checkpoints; when a
// hold ends, maintainLoop is woken to copy the log.
func (s *Store) setHold(hold bool) {
	pages := autoCheckpointPages
	if hold {
		pages = 0
	}
	if _, err := s.w.conn.ExecContext(s.bgCtx, fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", pages)); err != nil {
		s.log.Warn("could not set the write-ahead log's automatic checkpoints", "pages", pages, "err", err)
		return
	}
	s.hold.held = hold
	if hold {
		s.hold.holds.Add(1)
		s.log.Info("writing in bulk: checkpoints held")
		return
	}
	s.log.Info("checkpoints resumed")
	select {
	case s.hold.now <- struct{}{}:
	default: // one is already due
	}
}

// endHoldIf ends a hold the writer's connection has when the log has
// grown to heldLogLimit or a commit failed: HoldCheckpoints(true) must be
// called again for the next. The writer's goroutine only, after a
// transaction.
func (s *Store) endHoldIf(failed bool) {
	if !s.hold.held {
		return
	}
	if !failed {
		fi, err := os.Stat(s.path + "-wal")
		if err == nil && fi.Size() < heldLogLimit {
			return
		}
	}
	s.hold.want.Store(false)
	if s.w.conn != nil {
		s.setHold(false)
	}
}
