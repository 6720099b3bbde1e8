package auth

import (
	"fmt"
	"testing"
	"time"
)

func TestCredCacheBoundedLRU(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCredCache(3, time.Minute, false)
	for i := range 3 {
		c.put(fmt.Sprint("n", i), "h", now, c.generation("n"))
	}
	c.get("n0", now) // n0 is now the most recent; n1 the least
	c.put("n3", "h", now, c.generation("n"))
	if got := c.len(); got != 3 {
		t.Errorf("len() = %d; want 3", got)
	}
	for node, want := range map[string]bool{"n0": true, "n1": false, "n2": true, "n3": true} {
		if _, ok := c.get(node, now); ok != want {
			t.Errorf("get(%q) cached = %v; want %v", node, ok, want)
		}
	}
}

func TestCredCacheTTLAndGeneration(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCredCache(10, time.Minute, false)
	c.put("a", "h1", now, c.generation("n"))
	tests := []struct {
		at   time.Duration
		want bool
	}{
		{0, true}, {59 * time.Second, true}, {-time.Second, false},
	}
	for _, tt := range tests {
		if _, ok := c.get("a", now.Add(tt.at)); ok != tt.want {
			t.Errorf("get at %v = %v; want %v", tt.at, ok, tt.want)
		}
	}
	c.put("a", "h1", now, c.generation("n"))
	if _, ok := c.get("a", now.Add(time.Minute)); ok {
		t.Error("get at the TTL = cached; want expired")
	}

	gen := c.generation("a")
	c.forget("a") // a forget invalidates reads of that node in flight
	c.put("a", "h1", now, gen)
	if _, ok := c.get("a", now); ok {
		t.Error("put with a generation from before forget was cached")
	}
	other := "b"
	for genBucket(other) == genBucket("a") {
		other += "x"
	}
	gen = c.generation("a")
	c.forget(other) // another bucket's forget does not
	c.put("a", "h1", now, gen)
	if _, ok := c.get("a", now); !ok {
		t.Error("a forget of a node in another bucket refused the put")
	}
	gen = c.generation("a")
	c.reset() // a reset invalidates every read in flight
	c.put("a", "h1", now, gen)
	if _, ok := c.get("a", now); ok {
		t.Error("put with a generation from before reset was cached")
	}

	off := newCredCache(-1, time.Minute, false)
	off.put("a", "h", now, off.generation("a"))
	if _, ok := off.get("a", now); ok {
		t.Error("a cache of size -1 cached an entry")
	}
}
