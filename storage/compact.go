package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// compactChunk is how many revisions one compaction transaction deletes,
// so writes interleave with a large compaction.
const compactChunk = 10000

// vacuumChunk is how many free pages one incremental_vacuum returns to the
// file system per writer task. Every write waits for the task, and the
// API's in-flight slots fill with writes that wait: with a fleet of
// 10,000 agents on a busy 2-core server, 4,096 pages (16 MiB) held the
// writer for 0.7-1.0 s, and the agents' lightweight heartbeats, which
// need no write, queued behind the waiting writes for a slot (hundreds
// over 100 ms in that second). 512 pages hold it about an eighth as long.
const vacuumChunk = 512

// Compact removes change-log entries that are both older than
// CompactMinAge (by the Clock) and not among the newest
// CompactMinRevisions, then returns freed pages to the file system and
// truncates the write-ahead log. It returns the compacted revision: watches
// from below it fail with ErrCompacted. It runs every CompactInterval in
// the background; calls are serialized.
func (s *Store) Compact(ctx context.Context) (int64, error) {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	from := s.compacted.Load()
	select {
	case <-s.closing:
		return from, fmt.Errorf("compact: %w", ErrClosed)
	default:
	}
	target, err := s.compactTarget(ctx, from)
	if err != nil {
		return from, fmt.Errorf("compact: %w", err)
	}
	if target <= from {
		return from, nil
	}
	for lo := from; lo < target; {
		hi := min(lo+compactChunk, target)
		err := s.submit(ctx, &op{kind: opTask, what: "compaction", task: func(ctx context.Context, w *writer) error {
			if err := w.deleteChanges(ctx, hi); err != nil {
				return err
			}
			s.compacted.Store(hi)
			return nil
		}})
		if err != nil {
			return s.compacted.Load(), fmt.Errorf("compact to %d: %w", hi, err)
		}
		lo = hi
	}
	if err := s.be.shrink(ctx, s); err != nil {
		return target, fmt.Errorf("compact: %w", err)
	}
	s.log.Debug("compacted", "from", from, "to", target)
	return target, nil
}

// compactTarget returns the highest revision that may be compacted:
// at most Revision()-CompactMinRevisions, and below the first change
// younger than CompactMinAge. Change timestamps never decrease with the
// revision (the writer clamps them), so a binary search over revisions
// finds that change with a few primary-key lookups in one snapshot.
func (s *Store) compactTarget(ctx context.Context, compacted int64) (int64, error) {
	rev := s.rev.Load()
	byCount := rev - s.opts.CompactMinRevisions
	if byCount <= compacted {
		return compacted, nil
	}
	cutoff := s.clock.Now().Add(-s.opts.CompactMinAge).UnixNano()
	if err := s.beginRead(); err != nil {
		return 0, err
	}
	defer s.endRead()
	tx, err := s.rdb.BeginTx(ctx, s.be.readTx())
	if err != nil {
		return 0, translate(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	tsAt := tx.StmtContext(ctx, s.rs.tsAt)
	// Find the first revision in [compacted+1, byCount] stamped at or
	// after cutoff; hi = byCount+1 means none is.
	lo, hi := compacted+1, byCount+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		var ts int64
		err := tsAt.QueryRowContext(ctx, mid).Scan(&ts)
		if errors.Is(err, sql.ErrNoRows) {
			ts = math.MaxInt64
		} else if err != nil {
			return 0, translate(err)
		}
		if ts >= cutoff {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return compactTargetFor(rev, compacted, s.opts.CompactMinRevisions, lo), nil
}

// compactTargetFor is the rule behind compactTarget: keep the minRevisions
// newest revisions and every change from firstYoung on, the first revision
// stamped within CompactMinAge of now (rev+1 when none); never go back.
func compactTargetFor(rev, compacted, minRevisions, firstYoung int64) int64 {
	return max(compacted, min(rev-minRevisions, firstYoung-1))
}

// deleteChanges deletes the change log up to rev and records rev as the
// compacted revision, in one transaction.
func (w *writer) deleteChanges(ctx context.Context, rev int64) error {
	if err := w.be.beginMaintenance(ctx, w); err != nil {
		return translate(err)
	}
	if _, err := w.delChanges.ExecContext(ctx, rev); err != nil {
		w.rollback(ctx) //nolint:errcheck // the delete's error is the one to report
		return translate(err)
	}
	if _, err := w.raiseMeta.ExecContext(ctx, rev, metaCompacted, rev); err != nil {
		w.rollback(ctx) //nolint:errcheck // as above
		return translate(err)
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		w.rollback(ctx) //nolint:errcheck // as above
		return translate(err)
	}
	return nil
}

// checkpointBusyTimeout bounds how long a truncating checkpoint waits for
// readers; meanwhile new writes wait too, so it is short. A checkpoint
// that cannot finish is retried at the next interval.
const checkpointBusyTimeout = 100 * time.Millisecond

// maintainLoop runs compaction and checkpoints on the Clock until Close.
func (s *Store) maintainLoop() {
	defer close(s.loopsDone)
	var compactC, checkpointC <-chan time.Time
	if s.opts.CompactInterval > 0 {
		t := s.clock.NewTicker(s.opts.CompactInterval)
		defer t.Stop()
		compactC = t.C()
	}
	if s.opts.CheckpointInterval > 0 {
		t := s.clock.NewTicker(s.opts.CheckpointInterval)
		defer t.Stop()
		checkpointC = t.C()
	}
	for {
		select {
		case <-s.bgCtx.Done():
			return
		case <-compactC:
			if _, err := s.Compact(s.bgCtx); err != nil && s.bgCtx.Err() == nil {
				s.log.Warn("background compaction failed", "err", err)
			}
		case <-checkpointC:
			if err := s.be.checkpoint(s.bgCtx, s); err != nil && s.bgCtx.Err() == nil {
				s.log.Warn("background checkpoint failed", "err", err)
			}
			if err := s.reserve.ensure(); err != nil {
				s.log.Debug("space reserve not restored yet", "err", err)
			}
		}
	}
}
