package controllers

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// Handler is told about a change of one object: old is nil for an
// addition, cur is nil for a deletion. Handlers run on the informer's
// goroutine (or the writer's, for write-through) and must only enqueue
// work; they must not modify the objects.
type Handler func(old, cur api.Object)

// IndexFunc returns the index values of obj (none to leave it out).
type IndexFunc func(obj api.Object) []string

// Informer keeps the latest state of every object of one resource, fed by
// a list and then a watch of the store, and tells handlers about changes.
// Objects it returns are shared and must not be modified. Register
// handlers and indexes before Run; other methods are safe for concurrent
// use.
type Informer struct {
	resource string
	store    *storage.Store
	clk      clock.Clock
	log      *slog.Logger

	handlers []Handler
	idxFuncs map[string]IndexFunc

	mu       sync.RWMutex
	items    map[string]api.Object
	revs     map[string]int64 // revision of each item
	tombs    map[string]int64 // key → revision it was deleted at by a write-through
	indexes  map[string]map[string]map[string]struct{}
	synced   bool
	syncedCh chan struct{} // closed by the first Resync
	relists  int
}

// NewInformer returns an informer of resource ("pods", "nodes", …).
func NewInformer(store *storage.Store, resource string, clk clock.Clock, log *slog.Logger) *Informer {
	return &Informer{
		resource: resource, store: store, clk: clock.Or(clk), log: log,
		idxFuncs: map[string]IndexFunc{},
		items:    map[string]api.Object{}, revs: map[string]int64{}, tombs: map[string]int64{},
		indexes: map[string]map[string]map[string]struct{}{}, syncedCh: make(chan struct{}),
	}
}

// AddHandler registers h. It must be called before Run.
func (i *Informer) AddHandler(h Handler) { i.handlers = append(i.handlers, h) }

// AddIndex registers an index. It must be called before Run.
func (i *Informer) AddIndex(name string, f IndexFunc) {
	i.idxFuncs[name] = f
	i.indexes[name] = map[string]map[string]struct{}{}
}

// KeyOf returns the cache key of obj: namespace/name, or name for
// cluster-scoped objects.
func KeyOf(obj api.Object) string {
	m := obj.GetObjectMeta()
	if m.Namespace == "" {
		return m.Name
	}
	return m.Namespace + "/" + m.Name
}

// Run lists and watches until ctx ends, relisting whenever the watch ends
// (storage.Store.Follow). It returns when ctx ends.
func (i *Informer) Run(ctx context.Context) {
	i.store.Follow(ctx, i.resource, storage.Following{
		Listed: i.replace,
		Changed: func(typ storage.EventType, obj api.Object, rev int64) {
			if typ == storage.Deleted {
				i.remove(obj, rev, true)
			} else {
				i.put(obj, rev)
			}
		},
		Failed: func(err error) {
			if errors.Is(err, storage.ErrRelist) {
				i.log.Info("controller informer relisting", "resource", i.resource, "err", err)
				return
			}
			i.log.Warn("controller informer", "resource", i.resource, "err", err)
		},
		Clock: i.clk,
	})
}

// Resync lists the store and replaces the cache with the result, telling
// handlers what changed; it returns the list's revision. The test harness
// calls it directly.
func (i *Informer) Resync(ctx context.Context) (int64, error) {
	objs, rev, err := i.store.List(ctx, i.resource, storage.ListOptions{})
	if err != nil {
		return 0, err
	}
	i.replace(objs, rev)
	return rev, nil
}

// replace makes objs, a list at revision rev, the cache, telling
// handlers what changed.
func (i *Informer) replace(objs []api.Object, rev int64) {
	type change struct{ old, cur api.Object }
	var changes []change
	i.mu.Lock()
	seen := make(map[string]bool, len(objs))
	for _, o := range objs {
		k := KeyOf(o)
		seen[k] = true
		r := revisionOf(o)
		if t, ok := i.tombs[k]; ok && r <= t {
			continue // deleted by a write-through after the list was read
		}
		// An item cached at a newer revision (a write-through made after
		// the list was read) is kept.
		if old := i.items[k]; old == nil || i.revs[k] < r {
			i.setLocked(k, o, r)
			changes = append(changes, change{old, o})
		}
	}
	for k, old := range i.items {
		if !seen[k] && i.revs[k] <= rev {
			i.deleteLocked(k)
			changes = append(changes, change{old, nil})
		}
	}
	for k, r := range i.tombs {
		if r <= rev {
			delete(i.tombs, k)
		}
	}
	if !i.synced {
		i.synced = true
		close(i.syncedCh)
	}
	i.relists++
	i.mu.Unlock()
	for _, c := range changes {
		i.notify(c.old, c.cur)
	}
}

// Assume records obj, just written by a controller with its new
// resourceVersion, so reads see it before the watch delivers it.
func (i *Informer) Assume(obj api.Object) { i.put(obj, revisionOf(obj)) }

// AssumeDeleted records that a controller deleted obj at revision rev.
func (i *Informer) AssumeDeleted(obj api.Object, rev int64) { i.remove(obj, rev, false) }

func (i *Informer) put(obj api.Object, rev int64) {
	k := KeyOf(obj)
	i.mu.Lock()
	if t, ok := i.tombs[k]; ok && rev <= t {
		i.mu.Unlock()
		return // an older state of an object deleted since
	}
	old := i.items[k]
	if old != nil && rev <= i.revs[k] {
		i.mu.Unlock()
		return // not newer than what is cached (a write-through, say)
	}
	delete(i.tombs, k)
	i.setLocked(k, obj, rev)
	i.mu.Unlock()
	i.notify(old, obj)
}

func (i *Informer) remove(obj api.Object, rev int64, fromWatch bool) {
	k := KeyOf(obj)
	i.mu.Lock()
	old := i.items[k]
	if old != nil && i.revs[k] > rev {
		i.mu.Unlock()
		return // recreated since
	}
	if fromWatch {
		if t, ok := i.tombs[k]; ok && t <= rev {
			delete(i.tombs, k)
		}
	} else {
		i.tombs[k] = rev
	}
	if old == nil {
		i.mu.Unlock()
		return
	}
	i.deleteLocked(k)
	i.mu.Unlock()
	i.notify(old, nil)
}

func (i *Informer) notify(old, cur api.Object) {
	for _, h := range i.handlers {
		h(old, cur)
	}
}

func (i *Informer) setLocked(k string, obj api.Object, rev int64) {
	if old := i.items[k]; old != nil {
		i.unindexLocked(k, old)
	}
	i.items[k] = obj
	i.revs[k] = rev
	for name, f := range i.idxFuncs {
		idx := i.indexes[name]
		for _, v := range f(obj) {
			set := idx[v]
			if set == nil {
				set = map[string]struct{}{}
				idx[v] = set
			}
			set[k] = struct{}{}
		}
	}
}

func (i *Informer) deleteLocked(k string) {
	if old := i.items[k]; old != nil {
		i.unindexLocked(k, old)
	}
	delete(i.items, k)
	delete(i.revs, k)
}

func (i *Informer) unindexLocked(k string, obj api.Object) {
	for name, f := range i.idxFuncs {
		idx := i.indexes[name]
		for _, v := range f(obj) {
			if set := idx[v]; set != nil {
				delete(set, k)
				if len(set) == 0 {
					delete(idx, v)
				}
			}
		}
	}
}

// Synced reports whether the first list has been taken in.
func (i *Informer) Synced() bool {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.synced
}

// HasSynced returns a channel closed once the first list is taken in.
func (i *Informer) HasSynced() <-chan struct{} { return i.syncedCh }

// Get returns the object of key, or nil.
func (i *Informer) Get(key string) api.Object {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.items[key]
}

// List returns every object, in no particular order.
func (i *Informer) List() []api.Object {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]api.Object, 0, len(i.items))
	for _, o := range i.items {
		out = append(out, o)
	}
	return out
}

// ByIndex returns the objects whose index name has value v.
func (i *Informer) ByIndex(name, v string) []api.Object {
	i.mu.RLock()
	defer i.mu.RUnlock()
	set := i.indexes[name][v]
	out := make([]api.Object, 0, len(set))
	for k := range set {
		out = append(out, i.items[k])
	}
	return out
}

// Relists returns how many lists the informer has taken in.
func (i *Informer) Relists() int {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.relists
}

// revisionOf parses obj's resourceVersion; 0 when unset or malformed.
func revisionOf(obj api.Object) int64 {
	r, _ := strconv.ParseInt(obj.GetObjectMeta().ResourceVersion, 10, 64)
	return r
}
