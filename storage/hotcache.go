package storage

import (
	"sync"
	"sync/atomic"
)

// hotCache holds the objects the writer committed last, by key, so that
// reading an object just written needs no database read. That is the
// fleet's hot path: an agent writes the status of a pod the scheduler
// has just bound, and the server reads the pod twice for it (to
// authorize the node, then in GuaranteedUpdate). On SQLite every read
// after a commit also starts with an empty page cache (a reader
// connection drops its cache whenever the file changed), so each of
// those reads walked the B-tree through the write-ahead log.
//
// It is only used on SQLite, where this Store's writer makes every
// write (the file is locked to one process). Reads stay linearizable:
// the writer removes every key of a transaction before it commits, and
// puts the committed values back after the commit and before any caller
// or watcher hears of it. So while a write of a key may be visible in
// the database and not yet here, the key is absent and reads go to the
// database. Readers never fill the cache: a value read from the
// database may already be old when it would be put back.
//
// The cache is a FIFO bounded by entries and bytes. Its values are
// the committed values the watch cache holds too, so most of its memory
// is shared with it.
// hotObjectsBytes bounds the values a hotCache holds.
const hotObjectsBytes = 16 << 20

type hotCache struct {
	mu       sync.Mutex
	m        map[key]hotEntry
	ring     []hotSlot // FIFO of insertions; slots of removed entries are skipped
	head, n  int       // oldest slot and slots in use
	seq      uint64
	bytes    int64
	maxBytes int64

	hits, misses atomic.Int64
}

type hotEntry struct {
	value []byte // plain (unsealed) stored value, resourceVersion included
	rev   int64
	node  string // spec.nodeName, as the objects table's node column
	seq   uint64 // its slot in ring
}

type hotSlot struct {
	k   key
	seq uint64
}

// newHotCache returns a cache of at most entries objects and maxBytes of
// values; nil (no cache) when entries is not positive.
func newHotCache(entries int, maxBytes int64) *hotCache {
	if entries <= 0 {
		return nil
	}
	return &hotCache{m: make(map[key]hotEntry, entries), ring: make([]hotSlot, entries), maxBytes: maxBytes}
}

// get returns k's value and its revision, if cached. The value is the
// cache's own, shared with the watch cache and every reader: the caller
// must not change it.
func (c *hotCache) get(k key) ([]byte, int64, bool) {
	e, ok := c.lookup(k)
	return e.value, e.rev, ok
}

// node returns k's spec.nodeName, if k is cached.
func (c *hotCache) node(k key) (string, bool) {
	e, ok := c.lookup(k)
	return e.node, ok
}

// lookup returns k's entry and counts the hit or the miss.
func (c *hotCache) lookup(k key) (hotEntry, bool) {
	if c == nil {
		return hotEntry{}, false
	}
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok {
		c.misses.Add(1)
		return hotEntry{}, false
	}
	c.hits.Add(1)
	return e, true
}

// forget removes the keys ops write. The writer calls it before their
// transaction can commit.
func (c *hotCache) forget(ops []*op) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range ops {
		switch o.kind {
		case opCreate, opUpdate:
			c.remove(o.enc.key)
		case opDelete:
			c.remove(o.key)
		}
	}
}

// remember puts the committed values of changes, which the writer calls
// after their commit and before it answers anyone.
func (c *hotCache) remember(changes []*change) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range changes {
		c.remove(ch.key) // a transaction may write a key twice
		if ch.typ == Deleted || !ch.haveSets || int64(len(ch.value)) > c.maxBytes/16 {
			continue
		}
		for c.n == len(c.ring) || (c.n > 0 && c.bytes+int64(len(ch.value)) > c.maxBytes) {
			c.evictOldest()
		}
		c.seq++
		c.ring[(c.head+c.n)%len(c.ring)] = hotSlot{k: ch.key, seq: c.seq}
		c.n++
		c.m[ch.key] = hotEntry{value: ch.value, rev: ch.rev, node: ch.fields[watchIndexField], seq: c.seq}
		c.bytes += int64(len(ch.value))
	}
}

// clear empties the cache, for writes made outside the writer's
// transactions (a restore from a copy).
func (c *hotCache) clear() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	c.head, c.n, c.bytes = 0, 0, 0
}

func (c *hotCache) remove(k key) {
	if e, ok := c.m[k]; ok {
		c.bytes -= int64(len(e.value))
		delete(c.m, k)
	}
}

func (c *hotCache) evictOldest() {
	s := c.ring[c.head]
	c.ring[c.head] = hotSlot{}
	c.head = (c.head + 1) % len(c.ring)
	c.n--
	if e, ok := c.m[s.k]; ok && e.seq == s.seq {
		c.remove(s.k)
	}
}

// len is the number of cached objects.
func (c *hotCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
