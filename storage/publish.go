package storage

import (
	"context"
	"fmt"
)

// tailChunk is how many change-log rows one catch-up read returns.
const tailChunk = 1024

// publishCommitted hands the changes this Store's writer just committed,
// on top of revision base, to the broadcaster. On SQLite base is always
// the last published revision. On PostgreSQL other servers may have
// committed revisions in between; those are read from the change log
// first so watchers see every revision in order. If they cannot be read,
// every watcher is cut off (ErrTooSlow: the client lists again) rather
// than shown a gap.
func (s *Store) publishCommitted(base int64, cs []*change) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if s.rev.Load() < base {
		ctx, cancel := context.WithTimeout(s.bgCtx, s.opts.WriteTimeout)
		err := s.catchUpLocked(ctx, base)
		cancel()
		if err != nil {
			s.log.Warn("reading other servers' changes failed; resetting watches", "err", err)
			err = fmt.Errorf("missed changes %d..%d: %w: %w", s.rev.Load()+1, base, ErrTooSlow, err)
			s.rev.Store(base)
			s.missedHooks(base)
			s.bc.skipTo(base, err)
		}
	}
	last := s.rev.Load()
	i := 0
	for i < len(cs) && cs[i].rev <= last {
		i++ // the follower already published them, read back from the log
	}
	if i == len(cs) {
		return
	}
	s.rev.Store(cs[len(cs)-1].rev)
	s.noteChanges(cs[i:])
	s.bc.publish(cs[i:])
}

// catchUpLocked publishes the change log's entries above the last
// published revision, up to upTo (0: all), in chunks. s.pubMu is held.
func (s *Store) catchUpLocked(ctx context.Context, upTo int64) error {
	for {
		after := s.rev.Load()
		if upTo > 0 && after >= upTo {
			return nil
		}
		cs, err := s.readTail(ctx, after, upTo, tailChunk)
		if err != nil {
			return err
		}
		if len(cs) == 0 {
			if upTo > 0 {
				return fmt.Errorf("change log ends before revision %d: %w", upTo, ErrCompacted)
			}
			return nil
		}
		if cs[0].rev != after+1 {
			return fmt.Errorf("change log resumes at %d after %d: %w", cs[0].rev, after, ErrCompacted)
		}
		s.rev.Store(cs[len(cs)-1].rev)
		s.noteChanges(cs)
		s.bc.publish(cs)
		if len(cs) < tailChunk {
			if upTo == 0 || s.rev.Load() >= upTo {
				return nil
			}
		}
	}
}

// catchUp publishes what other servers committed since the last
// published revision.
func (s *Store) catchUp(ctx context.Context) error {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	if err := s.catchUpLocked(ctx, 0); err != nil {
		return fmt.Errorf("follow change log: %w", err)
	}
	return nil
}

// readTail reads up to limit changes of every resource with revisions
// above after (and at most upTo when it is set), in order. Changes of
// resources this binary does not know are returned without info; no
// watcher can select them.
func (s *Store) readTail(ctx context.Context, after, upTo int64, limit int) ([]*change, error) {
	if err := s.beginRead(); err != nil {
		return nil, err
	}
	defer s.endRead()
	if upTo <= 0 {
		upTo = 1<<63 - 1
	}
	rows, err := s.rs.tail.QueryContext(ctx, after, upTo, limit)
	if err != nil {
		return nil, fmt.Errorf("read change log: %w", translate(err))
	}
	defer rows.Close()
	var cs []*change
	for rows.Next() {
		c := &change{}
		var t int64
		if err := rows.Scan(&c.rev, &c.key.resource, &c.key.namespace, &c.key.name, &t, &c.ts,
			&c.rawLabels, &c.rawFields, &c.rawPrevLabels, &c.rawPrevFields, &c.value); err != nil {
			return nil, fmt.Errorf("read change log: %w", translate(err))
		}
		c.typ = EventType(t)
		if c.typ < Added || c.typ > Deleted {
			return nil, fmt.Errorf("change %d has type %d: %w", c.rev, t, ErrCorrupt)
		}
		c.info = s.resources[c.key.resource]
		if c.info != nil {
			var err error
			if c.value, err = s.seal.unseal(c.key.resource, c.value); err != nil {
				return nil, fmt.Errorf("read change log: %w", err)
			}
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read change log: %w", translate(err))
	}
	return cs, nil
}

// noteChanges records, per resource, the revision of the last change
// about to be published (ResourceRevision), this server's and other
// servers' alike. It runs before writers are answered.
func (s *Store) noteChanges(cs []*change) {
	for _, c := range cs {
		if lc := s.lastChange[c.key.resource]; lc != nil {
			lc.Store(c.rev)
		}
	}
	s.callHooks(cs)
}
