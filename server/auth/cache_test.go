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
		c.put(fmt.Sprint("n", i), "h", now, c.generation())
	}
	c.get("n0", now) // n0 is now the most recent; n1 the least
	c.put("n3", "h", now, c.generation())
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
	c.put("a", "h1", now, c.generation())
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
	c.put("a", "h1", now, c.generation())
	if _, ok := c.get("a", now.Add(time.Minute)); ok {
		t.Error("get at the TTL = cached; want expired")
	}

	gen := c.generation()
	c.forget("other") // any forget invalidates reads in flight
	c.put("a", "h1", now, gen)
	if _, ok := c.get("a", now); ok {
		t.Error("put with a generation from before forget was cached")
	}

	off := newCredCache(-1, time.Minute, false)
	off.put("a", "h", now, off.generation())
	if _, ok := off.get("a", now); ok {
		t.Error("a cache of size -1 cached an entry")
	}
}
