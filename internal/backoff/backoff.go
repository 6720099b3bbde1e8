package backoff

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// Defaults of a zero Backoff.
const (
	DefaultMin = 500 * time.Millisecond
	DefaultMax = 30 * time.Second
)

// Backoff yields growing delays between Min and Max and waits them out on
// Clock. The zero value is usable: DefaultMin, DefaultMax, jitter, the
// wall clock. A Backoff is a value a loop owns (copy a configured one
// into the loop); it is not safe for concurrent use.
//
// The delays double from Min and stay at Max: whatever the length of an
// outage they never exceed Max, never go below Min/2 and never overflow,
// so a loop retries at most about 2·d/Max times in a span d once capped.
type Backoff struct {
	Min, Max time.Duration
	// NoJitter makes Next return exactly Min, 2·Min, …, Max (tests).
	NoJitter bool
	// Clock times the waits of BackOff; nil means the wall clock.
	Clock clock.Clock

	cur      time.Duration
	failures int
}

func (b *Backoff) bounds() (time.Duration, time.Duration) {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi <= 0 {
		hi = max(DefaultMax, lo)
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// Next counts a failure and returns the delay before the next attempt:
// the current step or, with jitter, a uniformly random duration in its
// upper half. Each call doubles the step, up to Max. Callers that wait
// on something besides the clock use it; the others call BackOff.
func (b *Backoff) Next() time.Duration {
	lo, hi := b.bounds()
	b.failures++
	if b.cur < lo {
		b.cur = lo
	}
	d := min(b.cur, hi)
	if b.cur > hi/2 {
		b.cur = hi // doubling would pass Max (or overflow)
	} else {
		b.cur *= 2
	}
	if b.NoJitter || d < 2 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Reset starts the delays over from Min (an attempt succeeded).
func (b *Backoff) Reset() { b.cur, b.failures = 0, 0 }

// Failures is the number of failed attempts since the last Reset.
func (b *Backoff) Failures() int { return b.failures }

// BackOff is called after each attempt with its error. A nil err resets
// the delays and returns true at once. Otherwise it waits Next() on the
// Clock and returns true, or false as soon as ctx ends. The model is
// tailscale's logtail/backoff: the loop reads
//
//	for {
//		err := attempt(ctx)
//		if !bo.BackOff(ctx, err) {
//			return ctx.Err()
//		}
//		...
//	}
func (b *Backoff) BackOff(ctx context.Context, err error) bool {
	if err == nil {
		b.Reset()
		return ctx.Err() == nil
	}
	return clock.Sleep(ctx, clock.Or(b.Clock), b.Next())
}
