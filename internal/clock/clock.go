package clock

import (
	"context"
	"time"
)

// Clock tells the time and makes timers. Real is the wall clock; Fake is
// stepped by tests. Implementations are safe for concurrent use.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
	// NewTicker returns a ticker that fires every d (d > 0).
	NewTicker(d time.Duration) Ticker
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
	// Reset re-arms the timer to fire d from now.
	Reset(d time.Duration)
}

// Ticker fires periodically until stopped.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is the wall clock. Its zero value is ready to use.
type Real struct{}

var _ Clock = Real{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

// NewTicker wraps time.NewTicker.
func (Real) NewTicker(d time.Duration) Ticker { return realTicker{time.NewTicker(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Stop() bool            { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (r realTicker) C() <-chan time.Time { return r.t.C }
func (r realTicker) Stop()               { r.t.Stop() }

// Sleep waits for d on c, or until ctx is done. It reports whether the
// full duration passed (false means ctx was cancelled first).
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// Or returns c, or Real{} when c is nil, so config structs may leave their
// Clock unset.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}
