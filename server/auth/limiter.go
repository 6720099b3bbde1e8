package auth

import (
	"container/list"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// Defaults for LimiterConfig: a burst of 10 attempts, then one every 6 s
// (10 a minute) per key, for at most 10,000 keys.
const (
	DefaultLimiterEvery   = 6 * time.Second
	DefaultLimiterBurst   = 10
	DefaultLimiterMaxKeys = 10000
)

// LimiterConfig configures a Limiter. Zero fields take the defaults above.
type LimiterConfig struct {
	// Every is how often a key earns back one attempt.
	Every time.Duration
	// Burst is how many attempts a key may make at once.
	Burst int
	// MaxKeys bounds memory: beyond it the least recently seen key is
	// forgotten (and starts again with a full bucket if it returns).
	MaxKeys int
	// Clock refills the buckets. nil means the wall clock.
	Clock clock.Clock
}

// Limiter is a token-bucket rate limiter keyed by a string, the client IP
// for the token endpoints (/api/v1/join and failed authentications). It is
// safe for concurrent use. Create it with NewLimiter.
type Limiter struct {
	every   time.Duration
	burst   float64
	maxKeys int
	clk     clock.Clock

	mu      sync.Mutex
	order   *list.List               // of *bucket, most recently seen first
	buckets map[string]*list.Element // key → element of order
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
}

// NewLimiter returns a Limiter with cfg's settings, defaults filled in.
func NewLimiter(cfg LimiterConfig) *Limiter {
	if cfg.Every <= 0 {
		cfg.Every = DefaultLimiterEvery
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultLimiterBurst
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultLimiterMaxKeys
	}
	return &Limiter{
		every:   cfg.Every,
		burst:   float64(cfg.Burst),
		maxKeys: cfg.MaxKeys,
		clk:     clock.Or(cfg.Clock),
		order:   list.New(),
		buckets: make(map[string]*list.Element),
	}
}

// Allow reports whether key may make an attempt now, and if so spends one.
func (l *Limiter) Allow(key string) bool {
	now := l.clk.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.buckets[key]
	if !ok {
		el = l.order.PushFront(&bucket{key: key, tokens: l.burst, last: now})
		l.buckets[key] = el
		for l.order.Len() > l.maxKeys {
			back := l.order.Back()
			delete(l.buckets, back.Value.(*bucket).key)
			l.order.Remove(back)
		}
	} else {
		l.order.MoveToFront(el)
	}
	b := el.Value.(*bucket)
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(l.burst, b.tokens+float64(elapsed)/float64(l.every))
	}
	b.last = now // also when the clock stepped back: refill from here
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Len returns how many keys the limiter remembers.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}
