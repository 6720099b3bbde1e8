package storage

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
)

// seedWindow is the most change-log revisions seedWatchIndex reads as
// the Store opens: five minutes of a busy fleet's changes.
var seedWindow int64 = 1 << 19

// seedKey marks a stored field set holding watchIndexField; a change of
// a resource whose objects lack the field is read for its revision only.
var seedKey = []byte(`"` + watchIndexField + `":`)

// seedWatchIndex reads the revision, resource and field sets of the
// change log's newest entries (back to the compacted revision, at most
// seedWindow of them), so that the broadcaster knows after a restart
// what it knew before it: the last change of each resource
// (ResourceRevision), and of each node's pods. A fleet resuming its
// watches after a restart then resumes those of unchanged resources and
// quiet nodes without replay, as it would have before the restart.
// Without it, a restart of a 10,000-agent fleet's server right after a
// pod for every agent was placed told 1,467 agents' assignment streams
// (whose history had left the in-memory ring) to list again, and the
// fleet took 129 s rather than 54 s to get its next pods (14,011
// requests answered 429). A read that fails leaves the broadcaster
// knowing only the changes after Open: watches then replay or list
// again, as before.
func (s *Store) seedWatchIndex(ctx context.Context, rev, compacted int64) {
	from := max(compacted, rev-seedWindow)
	if rev <= from {
		return
	}
	seed, err := s.readSeed(ctx, from, rev)
	if err != nil {
		s.log.Warn("reading the change log's recent history failed; watches resumed from before the start replay or list again", "err", err)
		return
	}
	for resource, r := range seed.last {
		if lc := s.lastChange[resource]; lc != nil {
			lc.Store(r)
		}
	}
	s.bc.seed(from, seed.tracked)
}

// seedRead is what readSeed found: the revision of each resource's last
// change, and for the resources whose objects carry watchIndexField what
// a watchIndex tracks of them.
type seedRead struct {
	last    map[string]int64
	tracked map[string]*valueRevs
}

// readSeed reads the changes (from, to] for seedWatchIndex.
func (s *Store) readSeed(ctx context.Context, from, to int64) (*seedRead, error) {
	if err := s.beginRead(); err != nil {
		return nil, err
	}
	defer s.endRead()
	rows, err := s.rdb.QueryContext(ctx, s.be.rebind(`SELECT rev, resource, fields, prev_fields FROM changes WHERE rev > ? AND rev <= ? ORDER BY rev`), from, to)
	if err != nil {
		return nil, fmt.Errorf("read change log: %w", translate(err))
	}
	defer rows.Close()
	sr := &seedRead{last: make(map[string]int64), tracked: make(map[string]*valueRevs)}
	// unindexed holds, by resource, the last change whose field sets
	// lacked watchIndexField: its value is "" for a watchIndex.
	unindexed := make(map[string]int64)
	var (
		rev            int64
		resource       string
		fields, prevFs sql.RawBytes // valid until the next row: decodeSets copies
	)
	for rows.Next() {
		if err := rows.Scan(&rev, &resource, &fields, &prevFs); err != nil {
			return nil, fmt.Errorf("read change log: %w", translate(err))
		}
		sr.last[resource] = rev
		if !bytes.Contains(fields, seedKey) && !bytes.Contains(prevFs, seedKey) {
			unindexed[resource] = rev
			continue
		}
		t := sr.tracked[resource]
		if t == nil {
			t = &valueRevs{since: from, floor: from, last: make(map[string]int64)}
			sr.tracked[resource] = t
		}
		_, now, err := decodeSets(nil, fields)
		before := now
		if err == nil && prevFs != nil {
			_, before, err = decodeSets(nil, prevFs)
		}
		if err != nil {
			// As fanOutLocked does with a change it cannot read: what
			// came before it is not known.
			t.since, t.floor = rev, rev
			clear(t.last)
			continue
		}
		t.last[now.Get(watchIndexField)] = rev
		t.last[before.Get(watchIndexField)] = rev
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read change log: %w", translate(err))
	}
	for resource, t := range sr.tracked {
		if r := unindexed[resource]; r > t.since && r > t.last[""] {
			t.last[""] = r
		}
		t.pruneAt = len(t.last) + maxTrackedSlack
	}
	return sr, nil
}

// seed tells b what the change log holds of the changes after known,
// read as the Store opens: lastChange answers for them, and tracked is
// what the watch index knows of each resource's values. b must not have
// published or tracked anything yet.
func (b *broadcaster) seed(known int64, tracked map[string]*valueRevs) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.known = min(b.known, known)
	if len(tracked) > 0 && b.indexed.tracked == nil {
		b.indexed.tracked = make(map[string]*valueRevs, len(tracked))
	}
	for resource, t := range tracked {
		b.indexed.tracked[resource] = t
	}
}
