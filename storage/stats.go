package storage

import "time"

// Stats are the store's counters since Open, for metrics.
type Stats struct {
	Revision          int64
	CompactedRevision int64
	// Commits counts write transactions; Writes the objects they wrote
	// (Writes/Commits is the group-commit batch size).
	Commits, Writes int64
	// FailedCommits counts transactions rolled back by a database error.
	FailedCommits int64
	// CommitTime is the total time spent committing (fsync included).
	CommitTime time.Duration
	// Watchers is the number of open watches.
	Watchers int
	// SlowWrites counts the transactions and maintenance tasks that held
	// the writer longer than half a second (each is logged).
	SlowWrites int64
	// ReplayReads counts the change-log reads (a chunk each) of watches
	// resuming from history older than the in-memory watch cache.
	ReplayReads int64
	// HotHits and HotMisses count the point reads (Get, NodeOf) answered from
	// the objects written last (Options.HotObjects) and those that read
	// the database.
	HotHits, HotMisses int64
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	st := Stats{
		Revision:          s.rev.Load(),
		CompactedRevision: s.compacted.Load(),
		Commits:           s.commits.Load(),
		Writes:            s.writes.Load(),
		FailedCommits:     s.failedCommits.Load(),
		CommitTime:        time.Duration(s.commitNanos.Load()),
		Watchers:          s.bc.count(),
		ReplayReads:       s.replayReads.Load(),
		SlowWrites:        s.slowWrites.Load(),
	}
	if s.hot != nil {
		st.HotHits, st.HotMisses = s.hot.hits.Load(), s.hot.misses.Load()
	}
	return st
}

// Writes returns how many objects committed transactions have written
// since Open (Stats().Writes, without counting the watchers under the
// broadcaster's lock).
func (s *Store) Writes() int64 { return s.writes.Load() }

// count returns the number of registered watchers.
func (b *broadcaster) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.indexed.n
	for _, ws := range b.watchers {
		n += len(ws)
	}
	return n
}
