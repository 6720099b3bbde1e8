package kubelet

import (
	"sync"
	"time"
)

// Back-off bounds, as in the kubelet.
const (
	backoffInitial = 10 * time.Second
	backoffMax     = 5 * time.Minute
)

// backoff is a per-key exponential back-off like the kubelet's
// flowcontrol.Backoff, as a pure function of the times it is given: the
// first failure is retried at once, the next after initial, then twice as
// long each time up to max. An entry expires, and the key starts afresh,
// when the event it is asked about comes 2×max or more after the last
// step: for a container that means it ran for 10 minutes.
type backoff struct {
	initial, max time.Duration

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newBackoff(initial, max time.Duration) *backoff {
	return &backoff{initial: initial, max: max, entries: map[string]*backoffEntry{}}
}

func (b *backoff) expired(e *backoffEntry, eventTime time.Time) bool {
	return eventTime.Sub(e.lastUpdate) >= 2*b.max
}

// remainingSince is how long key stays in back-off for an event (a
// container's exit) at eventTime, seen at now; 0 means go ahead.
func (b *backoff) remainingSince(key string, eventTime, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil || b.expired(e, eventTime) {
		return 0
	}
	if d := eventTime.Add(e.delay).Sub(now); d > 0 {
		return d
	}
	return 0
}

// remainingSinceUpdate is how long key stays in back-off counted from its
// last step (image pulls use this); 0 means go ahead.
func (b *backoff) remainingSinceUpdate(key string, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil {
		return 0
	}
	if d := e.lastUpdate.Add(e.delay).Sub(now); d > 0 {
		return d
	}
	return 0
}

// next records a step for key at now (an allowed restart, a failed
// pull): the first sets the delay to initial, later ones double it up to
// max, and an expired entry starts afresh.
func (b *backoff) next(key string, eventTime, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	switch {
	case e == nil || b.expired(e, eventTime):
		e = &backoffEntry{delay: b.initial}
		b.entries[key] = e
	default:
		e.delay = min(2*e.delay, b.max)
	}
	e.lastUpdate = now
}

// reset forgets key.
func (b *backoff) reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// gc forgets entries whose last step is older than 2×max at now.
func (b *backoff) gc(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, e := range b.entries {
		if b.expired(e, now) {
			delete(b.entries, k)
		}
	}
}

// delay is key's current delay (0 if none).
func (b *backoff) delay(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.entries[key]; e != nil {
		return e.delay
	}
	return 0
}
