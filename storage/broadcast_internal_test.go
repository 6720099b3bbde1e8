package storage

import "testing"

// TestWatchCacheBoundedByBytes: the ring drops its oldest changes to stay
// within its byte budget, keeps the newest even when it alone is larger,
// and counts what it forgets.
func TestWatchCacheBoundedByBytes(t *testing.T) {
	per := int64(changeOverhead + 1000)
	b := newBroadcaster(0, 10, 3*per)
	for rev := int64(1); rev <= 5; rev++ {
		b.publish([]*change{{rev: rev, value: make([]byte, 1000)}})
	}
	b.mu.Lock()
	n, bytes, oldest := b.n, b.bytes, b.oldestLocked()
	b.mu.Unlock()
	if n != 3 || bytes != 3*per || oldest != 3 {
		t.Fatalf("ring holds %d changes, %d bytes, oldest revision %d; want 3, %d, 3", n, bytes, oldest, 3*per)
	}
	b.publish([]*change{{rev: 6, value: make([]byte, 10000)}})
	b.mu.Lock()
	n, bytes, oldest = b.n, b.bytes, b.oldestLocked()
	b.mu.Unlock()
	if n != 1 || bytes != changeOverhead+10000 || oldest != 6 {
		t.Fatalf("after a change larger than the budget: %d changes, %d bytes, oldest %d; want only it", n, bytes, oldest)
	}
	// By count too: a ring of 10 with no byte bound keeps the last 10.
	c := newBroadcaster(0, 10, 0)
	for rev := int64(1); rev <= 25; rev++ {
		c.publish([]*change{{rev: rev, value: make([]byte, 1000)}})
	}
	if c.n != 10 || c.oldestLocked() != 16 || c.bytes != 10*per {
		t.Fatalf("count-bounded ring: %d changes, oldest %d, %d bytes; want 10, 16, %d", c.n, c.oldestLocked(), c.bytes, 10*per)
	}
}
