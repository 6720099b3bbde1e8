package auth

import (
	"container/list"
	"sync"
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
// With Config.Invalidated the TTL is not used: the caller forgets an
// entry synchronously whenever its credential changes (forget, reset).
type credCache struct {
	size  int
	ttl   time.Duration
	noTTL bool

	mu    sync.Mutex
	gen   uint64
	order *list.List               // of *cacheEntry, most recently used first
	items map[string]*list.Element // node name → element of order
}

type cacheEntry struct {
	node  string
	hash  string
	added time.Time
}

func newCredCache(size int, ttl time.Duration, noTTL bool) *credCache {
	return &credCache{size: size, ttl: ttl, noTTL: noTTL, order: list.New(), items: make(map[string]*list.Element)}
}

// get returns the cached hash for node if it can be trusted: always
// (noTTL: the caller forgets changed credentials), or while the entry is
// younger than ttl at now.
func (c *credCache) get(node string, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[node]
	if !ok {
		return "", false
	}
	e := el.Value.(*cacheEntry)
	if age := now.Sub(e.added); !c.noTTL && (age >= c.ttl || age < 0) {
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

// put caches hash for node unless forget ran since generation returned
// gen.
func (c *credCache) put(node, hash string, now time.Time, gen uint64) {
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
		e.hash, e.added = hash, now
		c.order.MoveToFront(el)
		return
	}
	c.items[node] = c.order.PushFront(&cacheEntry{node: node, hash: hash, added: now})
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

// reset forgets everything and invalidates reads in flight.
func (c *credCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.order.Init()
	clear(c.items)
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
