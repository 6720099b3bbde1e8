package auth

import (
	"container/list"
	"sync"
	"sync/atomic"
	"time"
)

// credCache remembers, per node name, the stored hash of a credential that
// authenticated recently, so per-request authentication need not read the
// store. It holds at most size entries (least recently used go first), each
// for at most ttl, which bounds how long a credential deleted behind
// Tokens' back (not through DeleteNodeCredential or InvalidateNode) is
// still accepted. Safe for concurrent use.
//
// A lookup that misses reads the store without the lock held; forget may
// run meanwhile. gen, bumped by every forget, lets put refuse a value read
// before the forget, so a deleted credential cannot be re-cached by a
// lookup that raced with its deletion.
//
// When the caller knows the store's Secrets revision (Config.Revision),
// the TTL is not used: an entry is trusted while no Secret changed since
// it was read (its rev is still current), or while the change feed has
// forgotten every credential changed up to the current revision (seen).
type credCache struct {
	size int
	ttl  time.Duration
	// seen is the revision up to which every changed credential has been
	// forgotten (Tokens.SecretChanged); -1 until a feed reports.
	seen atomic.Int64

	mu    sync.Mutex
	gen   uint64
	order *list.List               // of *cacheEntry, most recently used first
	items map[string]*list.Element // node name → element of order
}

type cacheEntry struct {
	node  string
	hash  string
	added time.Time
	rev   int64 // the Secrets revision before it was read; -1: unknown
}

func newCredCache(size int, ttl time.Duration) *credCache {
	c := &credCache{size: size, ttl: ttl, order: list.New(), items: make(map[string]*list.Element)}
	c.seen.Store(-1)
	return c
}

// get returns the cached hash for node if it can be trusted: with cur,
// the store's Secrets revision read before the call (-1: unknown), when
// nothing changed since the entry was read or the feed has caught up
// with cur; without it, when the entry is younger than ttl at now.
func (c *credCache) get(node string, now time.Time, cur int64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[node]
	if !ok {
		return "", false
	}
	e := el.Value.(*cacheEntry)
	if cur >= 0 {
		if e.rev != cur && c.seen.Load() < cur {
			// A Secret changed and the feed has not told which yet:
			// the caller reads the store.
			return "", false
		}
	} else if age := now.Sub(e.added); age >= c.ttl || age < 0 {
		c.removeLocked(el)
		return "", false
	}
	c.order.MoveToFront(el)
	return e.hash, true
}

// generation returns the value to pass to put for a store read that
// starts now.
func (c *credCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put caches hash for node, read at Secrets revision rev (-1: unknown),
// unless forget ran since generation returned gen.
func (c *credCache) put(node, hash string, now time.Time, gen uint64, rev int64) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if el, ok := c.items[node]; ok {
		e := el.Value.(*cacheEntry)
		e.hash, e.added, e.rev = hash, now, rev
		c.order.MoveToFront(el)
		return
	}
	c.items[node] = c.order.PushFront(&cacheEntry{node: node, hash: hash, added: now, rev: rev})
	for c.order.Len() > c.size {
		c.removeLocked(c.order.Back())
	}
}

// forget drops node's entry and invalidates every store read in flight.
func (c *credCache) forget(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if el, ok := c.items[node]; ok {
		c.removeLocked(el)
	}
}

// advance records that every credential changed up to rev has been
// forgotten.
func (c *credCache) advance(rev int64) {
	for {
		cur := c.seen.Load()
		if rev <= cur || c.seen.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// reset forgets everything and invalidates reads in flight: the feed
// (re)starts at rev, having possibly missed changes before it.
func (c *credCache) reset(rev int64) {
	c.mu.Lock()
	c.gen++
	c.order.Init()
	clear(c.items)
	c.seen.Store(rev)
	c.mu.Unlock()
}

func (c *credCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *credCache) removeLocked(el *list.Element) {
	delete(c.items, el.Value.(*cacheEntry).node)
	c.order.Remove(el)
}
