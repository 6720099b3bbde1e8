package storage

// watchIndexField is the field by which watches are indexed: every
// agent's assignment stream watches pods with spec.nodeName=<its node>,
// so with N agents each pod change would otherwise be matched against N
// selectors (under the broadcaster's lock, on the writer's path) to reach
// the one or two that want it.
const watchIndexField = "spec.nodeName"

// watchIndex holds the watchers whose field selector requires one value
// of watchIndexField: resource → value → watchers.
//
// It also knows, for each resource an indexed watch has been asked of,
// the revision of the last change to each value (the value before or
// after the change: the changes an indexed watcher of that value would
// be offered), so that an indexed watch resumed from a revision the
// ring no longer holds resumes when its node's pods did not change since
// rather than being told to list again. An agent's assignment stream is
// rotated every few minutes; during a large placement the ring holds two
// seconds, and each rotation was a 410, a list and a second stream.
type watchIndex struct {
	by map[string]map[string]map[*Watcher]struct{}
	n  int
	// tracked holds, by resource, what is known of its changes' values.
	tracked map[string]*valueRevs
}

// valueRevs is what a watchIndex knows of one resource's changes: last
// holds, by value, the revision of the value's last change after since.
// Values at or below floor may have been pruned: an absent value is known
// unchanged only after the floor. since is never below the broadcaster's
// known revision: tracking starts at a published revision or where the
// history read at Open starts (seedwatch.go), and skipTo forgets it
// (failAll).
type valueRevs struct {
	since, floor int64
	last         map[string]int64
	pruneAt      int // len(last) at which values are next pruned
}

// indexValue returns the value w's selector requires of watchIndexField,
// if it requires one.
func indexValue(w *Watcher) (string, bool) {
	return w.filter.fields.RequiresExactMatch(watchIndexField)
}

// add keeps w when its selector requires a value of watchIndexField and
// reports whether it did.
func (ix *watchIndex) add(w *Watcher) bool {
	v, ok := indexValue(w)
	if !ok {
		return false
	}
	if ix.by == nil {
		ix.by = make(map[string]map[string]map[*Watcher]struct{})
	}
	byValue := ix.by[w.resource]
	if byValue == nil {
		byValue = make(map[string]map[*Watcher]struct{})
		ix.by[w.resource] = byValue
	}
	ws := byValue[v]
	if ws == nil {
		ws = make(map[*Watcher]struct{}, 1)
		byValue[v] = ws
	}
	if _, dup := ws[w]; !dup {
		ws[w] = struct{}{}
		ix.n++
	}
	return true
}

// remove forgets w; it is idempotent.
func (ix *watchIndex) remove(w *Watcher) {
	v, ok := indexValue(w)
	if !ok {
		return
	}
	byValue := ix.by[w.resource]
	ws := byValue[v]
	if _, there := ws[w]; !there {
		return
	}
	delete(ws, w)
	ix.n--
	if len(ws) == 0 {
		delete(byValue, v)
	}
}

// failAll ends every indexed watcher with err and forgets them, and what
// it knew of changes.
func (ix *watchIndex) failAll(err error) {
	for _, byValue := range ix.by {
		for _, ws := range byValue {
			for w := range ws {
				w.fail(err)
			}
		}
	}
	clear(ix.by)
	ix.n = 0
	clear(ix.tracked)
}

// track starts noting the changes of resource from revision rev, when
// they are not noted yet.
func (ix *watchIndex) track(resource string, rev int64) {
	if ix.tracked[resource] != nil {
		return
	}
	if ix.tracked == nil {
		ix.tracked = make(map[string]*valueRevs)
	}
	ix.tracked[resource] = &valueRevs{since: rev, floor: rev, last: make(map[string]int64), pruneAt: maxTrackedSlack}
}

// maxTrackedSlack is how many values noted beyond those watched are kept
// before those last changed before the ring's oldest revision are pruned
// (a fleet's nodes come and go).
var maxTrackedSlack = 4096

// note records c, whose watchIndexField was before and is now, when
// c's resource is tracked; oldest is the ring's oldest revision.
func (ix *watchIndex) note(c *change, now, before string, oldest int64) {
	t := ix.tracked[c.key.resource]
	if t == nil {
		return
	}
	t.last[now] = c.rev
	if before != now {
		t.last[before] = c.rev
	}
	if len(t.last) < t.pruneAt {
		return
	}
	watched := ix.by[c.key.resource]
	for v, rev := range t.last {
		if rev < oldest && len(watched[v]) == 0 {
			delete(t.last, v)
			t.floor = max(t.floor, rev)
		}
	}
	t.pruneAt = len(t.last) + maxTrackedSlack
}

// forget stops knowing the values of resource's changes up to rev, which
// could not be read (their fields did not decode).
func (ix *watchIndex) forget(resource string, rev int64) {
	if t := ix.tracked[resource]; t != nil {
		t.since, t.floor = rev, rev
		clear(t.last)
	}
}

// unchangedSince reports whether no change of resource had value in its
// watchIndexField, before or after it, after revision from.
func (ix *watchIndex) unchangedSince(resource, value string, from int64) bool {
	t := ix.tracked[resource]
	if t == nil || from < t.since {
		return false
	}
	if rev, ok := t.last[value]; ok {
		return rev <= from
	}
	return from >= t.floor
}

// addLocked registers w with the index or with the plain watchers of its
// resource.
func (b *broadcaster) addLocked(w *Watcher) {
	if b.indexed.add(w) {
		return
	}
	ws := b.watchers[w.resource]
	if ws == nil {
		ws = make(map[*Watcher]struct{})
		b.watchers[w.resource] = ws
	}
	ws[w] = struct{}{}
}

// fanOutLocked offers c to every watcher that may select it: the plain
// watchers of its resource, and the indexed ones whose value is c's
// watchIndexField before or after the change (a selector requiring
// another value matches neither state, so that watcher would skip c).
// A watcher that has ended is forgotten.
func (b *broadcaster) fanOutLocked(c *change) {
	ws := b.watchers[c.key.resource]
	for w := range ws {
		if !w.offer(c) {
			delete(ws, w)
		}
	}
	byValue := b.indexed.by[c.key.resource]
	if len(byValue) == 0 && b.indexed.tracked[c.key.resource] == nil {
		return
	}
	if err := c.sets(); err != nil {
		// Every indexed watcher would fail on c: let each see the error.
		for _, ws := range byValue {
			b.offerIndexedLocked(ws, c)
		}
		b.indexed.forget(c.key.resource, c.rev)
		return
	}
	now, before := c.fields.Get(watchIndexField), c.prevFields.Get(watchIndexField)
	b.indexed.note(c, now, before, b.oldestLocked())
	b.offerIndexedLocked(byValue[now], c)
	if before != now {
		b.offerIndexedLocked(byValue[before], c)
	}
}

func (b *broadcaster) offerIndexedLocked(ws map[*Watcher]struct{}, c *change) {
	for w := range ws {
		if !w.offer(c) {
			b.indexed.remove(w)
		}
	}
}
