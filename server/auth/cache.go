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
// run meanwhile. A generation, bumped by forget, lets put refuse a value
// read before the forget, so a deleted credential cannot be re-cached by a
// lookup that raced with its deletion. Generations are kept for 256
// buckets of node names, so a join storm's forgets (one per new
// credential) do not refuse every other node's lookup in flight.
//
// With Config.Invalidated the TTL is not used: the caller forgets an
// entry synchronously whenever its credential changes (forget, reset).
type credCache struct {
	size  int
	ttl   time.Duration
	noTTL bool

	mu    sync.Mutex
	gens  [genBuckets]uint64
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

// genBuckets is how many generations credCache keeps.
const genBuckets = 256

// genBucket is node's generation bucket (FNV-1a).
func genBucket(node string) int {
	h := uint32(2166136261)
	for i := 0; i < len(node); i++ {
		h = (h ^ uint32(node[i])) * 16777619
	}
	return int(h % genBuckets)
}

// generation returns the value to pass to put for a store read of node
// that starts now.
func (c *credCache) generation(node string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gens[genBucket(node)]
}

// generations returns every bucket's generation, for a read of many
// nodes (Tokens.Warm) that starts now: the value to pass to put for node
// is the one at genBucket(node).
func (c *credCache) generations() [genBuckets]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gens
}

// put caches hash for node unless forget ran since generation returned
// gen, and reports whether it did.
func (c *credCache) put(node, hash string, now time.Time, gen uint64) bool {
	if c.size <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gens[genBucket(node)] {
		return false
	}
	if el, ok := c.items[node]; ok {
		e := el.Value.(*cacheEntry)
		e.hash, e.added = hash, now
		c.order.MoveToFront(el)
		return true
	}
	c.items[node] = c.order.PushFront(&cacheEntry{node: node, hash: hash, added: now})
	for c.order.Len() > c.size {
		c.removeLocked(c.order.Back())
	}
	return true
}

// forget drops node's entry and invalidates every store read in flight.
func (c *credCache) forget(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gens[genBucket(node)]++
	if el, ok := c.items[node]; ok {
		c.removeLocked(el)
	}
}

// reset forgets everything and invalidates reads in flight.
func (c *credCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.gens {
		c.gens[i]++
	}
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
