package storage

// watchIndexField is the field by which watches are indexed: every
// agent's assignment stream watches pods with spec.nodeName=<its node>,
// so with N agents each pod change would otherwise be matched against N
// selectors (under the broadcaster's lock, on the writer's path) to reach
// the one or two that want it.
const watchIndexField = "spec.nodeName"

// watchIndex holds the watchers whose field selector requires one value
// of watchIndexField: resource → value → watchers.
type watchIndex struct {
	by map[string]map[string]map[*Watcher]struct{}
	n  int
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

// failAll ends every indexed watcher with err and forgets them.
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
	if len(byValue) == 0 {
		return
	}
	if err := c.sets(); err != nil {
		// Every indexed watcher would fail on c: let each see the error.
		for _, ws := range byValue {
			b.offerIndexedLocked(ws, c)
		}
		return
	}
	now, before := c.fields.Get(watchIndexField), c.prevFields.Get(watchIndexField)
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
