package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff yields growing delays between Min and Max. The zero value uses
// DefaultMin and DefaultMax. It is not safe for concurrent use.
type Backoff struct {
	Min, Max time.Duration
	// NoJitter makes Next return exactly Min, 2·Min, … (tests).
	NoJitter bool
	cur      time.Duration
}

// Defaults of a zero Backoff.
const (
	DefaultMin = 500 * time.Millisecond
	DefaultMax = 30 * time.Second
)

func (b *Backoff) bounds() (time.Duration, time.Duration) {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi < lo {
		hi = max(DefaultMax, lo)
	}
	return lo, hi
}

// Next returns the next delay: the current step, or with jitter a
// uniformly random duration in its upper half, never more than Max. Each
// call doubles the step up to Max.
func (b *Backoff) Next() time.Duration {
	lo, hi := b.bounds()
	if b.cur < lo {
		b.cur = lo
	}
	d := b.cur
	b.cur = min(2*b.cur, hi)
	if b.NoJitter || d < 2 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Reset starts the delays over from Min.
func (b *Backoff) Reset() { b.cur = 0 }
