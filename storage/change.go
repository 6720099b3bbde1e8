package storage

import (
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/api/labels"
)

// EventType says what a watch event reports.
type EventType uint8

// Event types. Their String forms are the watch stream's "type" values.
const (
	Added EventType = iota + 1
	Modified
	Deleted
)

// String returns ADDED, MODIFIED or DELETED.
func (t EventType) String() string {
	switch t {
	case Added:
		return api.Added
	case Modified:
		return api.Modified
	case Deleted:
		return api.Deleted
	}
	return "UNKNOWN"
}

// Event is one change delivered to a watcher. Value and the object from
// Object are shared by every watcher that sees the change: both are
// read-only. Value is the stored JSON (TypeMeta set, resourceVersion =
// Revision), ready to be written to a client as is.
type Event struct {
	Type     EventType
	Revision int64
	Value    []byte
	c        *change
}

// Object returns the event's object, decoded from Value at most once per
// change and shared by all watchers: callers must not modify it (copy it
// first). For a deletion it is the object's last state, stamped with the
// deletion's revision; for a Deleted that reports an object leaving the
// selection, it is the object as changed.
func (e Event) Object() (api.Object, error) { return e.c.object() }

// Key returns the namespace ("" for cluster-scoped objects) and name of
// the event's object without decoding it, so a watcher can skip events it
// already knows (the scheduler skips the pods it has just bound itself).
func (e Event) Key() (namespace, name string) { return e.c.key.namespace, e.c.key.name }

// change is one row of the change log, in memory. It is immutable once
// published except for its lazily decoded parts, which sync.Once guards.
type change struct {
	rev  int64
	typ  EventType // Added, Modified or Deleted as written
	key  key
	info *api.ResourceInfo
	ts   int64 // unix nanos, by the Clock

	// committed is when the writer's COMMIT returned (wall clock with its
	// monotonic reading; zero for changes read back from the log). Only
	// benchmarks read it, to measure commit-to-delivery latency.
	committed time.Time

	value []byte
	// Raw stored labels and fields after the change (for Deleted: of the
	// last state); rawPrev* are those before it, nil when unchanged.
	rawLabels, rawFields         []byte
	rawPrevLabels, rawPrevFields []byte

	setsOnce   sync.Once
	haveSets   bool       // labels and fields were set by the writer
	labels     labels.Set // nil when the object has no labels
	fields     fields.Set
	prevLabels labels.Set
	prevFields fields.Set
	setsErr    error

	objOnce sync.Once
	obj     api.Object
	objErr  error
}

// sets decodes the label and field sets once.
func (c *change) sets() error {
	c.setsOnce.Do(func() {
		if !c.haveSets {
			c.labels, c.fields, c.setsErr = decodeSets(c.rawLabels, c.rawFields)
			if c.setsErr != nil {
				return
			}
		}
		c.prevLabels, c.prevFields = c.labels, c.fields
		if c.rawPrevLabels != nil {
			c.prevLabels, _, c.setsErr = decodeSets(c.rawPrevLabels, nil)
			if c.setsErr != nil {
				return
			}
		}
		if c.rawPrevFields != nil {
			_, c.prevFields, c.setsErr = decodeSets(nil, c.rawPrevFields)
		}
	})
	return c.setsErr
}

func (c *change) object() (api.Object, error) {
	c.objOnce.Do(func() { c.obj, c.objErr = decode(c.info, c.value) })
	return c.obj, c.objErr
}

// filter is what a watcher selects.
type filter struct {
	namespace string
	labels    labels.Selector
	fields    fields.Selector
}

// everything reports whether f selects by namespace at most, so label and
// field sets need not be decoded.
func (f *filter) everything() bool { return f.labels.Empty() && f.fields.Empty() }

// eventFor decides how c looks to a watcher with filter f, as the
// Kubernetes watch cache does: a change that makes an object start matching
// is Added, stop matching is Deleted (carrying the new state), keep
// matching is c's own type. ok is false when the watcher must not see c.
func (f *filter) eventFor(c *change) (t EventType, ok bool, err error) {
	if f.namespace != "" && c.key.namespace != f.namespace {
		return 0, false, nil
	}
	before, after := c.typ != Added, c.typ != Deleted
	if !f.everything() {
		if err := c.sets(); err != nil {
			return 0, false, err
		}
		before = before && f.labels.Matches(c.prevLabels) && f.fields.Matches(c.prevFields)
		after = after && f.labels.Matches(c.labels) && f.fields.Matches(c.fields)
	}
	switch {
	case before && after:
		return Modified, true, nil
	case after:
		return Added, true, nil
	case before:
		return Deleted, true, nil
	}
	return 0, false, nil
}
