package storage

import (
	"context"
	"sync/atomic"
)

// checkpointer copies the write-ahead log into the database beside the
// writer, so the writer never does it inside a commit.
//
// SQLite's own automatic checkpoint runs in the connection that commits,
// once the log passes its threshold (1,000 pages by default), and a
// checkpoint that cannot finish (a reader holds an older snapshot) is
// tried again at every later commit: each then copied the pages just
// committed into the database and synced both files, three syncs a
// commit instead of one. In a fleet's placement of 10,000 pods that was
// a fifth of the writer's CPU and most of the times it gave up its core
// (docs/benchmarks.md, round eighteen), while everything the server
// writes waits for the writer.
//
// Instead the writer counts what it commits and, every
// checkpointEveryWrites writes, wakes this loop, which runs a PASSIVE
// checkpoint on a read connection (passiveCheckpoint): it neither waits
// for nor blocks the writer or readers. The writer's own automatic
// checkpoint stays as a backstop at writerAutoCheckpointPages, for a log
// this loop cannot keep small. The periodic truncating checkpoint
// (Options.CheckpointInterval) is unchanged.
type checkpointer struct {
	kick chan struct{} // capacity 1: a wake-up is pending
	// last is the revision the last checkpoint was asked for at.
	last atomic.Int64
	// runs and the last run's frames, for tests and metrics.
	runs                 atomic.Int64
	lastFrames, lastDone atomic.Int64
}

// checkpointEveryWrites is how many committed writes wake the
// checkpointer: a write is one to a few pages, so about SQLite's own
// threshold of 1,000 pages.
const checkpointEveryWrites = 256

// writerAutoCheckpointPages is the writer connection's
// wal_autocheckpoint: the log size (32 MiB at 4 KiB pages) at which the
// writer checkpoints in its commit after all, as SQLite would.
const writerAutoCheckpointPages = 8192

func newCheckpointer() checkpointer {
	return checkpointer{kick: make(chan struct{}, 1)}
}

// committed is called by the writer after each commit up to revision
// rev; it never blocks.
func (c *checkpointer) committed(rev int64) {
	if c.kick == nil || rev-c.last.Load() < checkpointEveryWrites {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// run checkpoints when woken, until ctx ends. A wake-up needs another
// checkpointEveryWrites commits, so a failing checkpoint is not retried
// in a loop.
func (c *checkpointer) run(ctx context.Context, s *Store, b *sqliteBackend) {
	if c.kick == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		c.last.Store(s.Revision())
		frames, done, err := b.passiveCheckpoint(ctx, s)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Debug("background checkpoint failed", "err", err)
			}
			continue
		}
		c.runs.Add(1)
		c.lastFrames.Store(frames)
		c.lastDone.Store(done)
	}
}
