package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a Clock whose time moves only when a test calls Advance or Set.
// Timers and tickers fire synchronously inside Advance, in deadline order,
// with non-blocking sends on channels of capacity 1 (like time.Timer).
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*fakeWaiter
	added   chan struct{}
}

var _ Clock = (*Fake)(nil)

// NewFake returns a Fake set to t.
func NewFake(t time.Time) *Fake { return &Fake{now: t, added: make(chan struct{}, 1)} }

type fakeWaiter struct {
	f      *Fake
	when   time.Time
	period time.Duration // 0 for timers
	ch     chan time.Time
	active bool
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	w := &fakeWaiter{f: f, ch: make(chan time.Time, 1)}
	f.mu.Lock()
	f.armLocked(w, d)
	f.mu.Unlock()
	return w
}

// NewTicker returns a ticker that fires every d of fake time.
func (f *Fake) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		d = 1
	}
	w := &fakeWaiter{f: f, ch: make(chan time.Time, 1), period: d}
	f.mu.Lock()
	f.armLocked(w, d)
	f.mu.Unlock()
	return fakeTicker{w}
}

type fakeTicker struct{ w *fakeWaiter }

func (t fakeTicker) C() <-chan time.Time { return t.w.ch }
func (t fakeTicker) Stop()               { t.w.Stop() }

func (f *Fake) armLocked(w *fakeWaiter, d time.Duration) {
	w.when = f.now.Add(d)
	if !w.active {
		w.active = true
		f.waiters = append(f.waiters, w)
	}
	if f.added == nil {
		f.added = make(chan struct{}, 1)
	}
	select {
	case f.added <- struct{}{}:
	default:
	}
	if d <= 0 {
		f.fireLocked()
	}
}

// Advance moves the fake time forward by d, firing every timer and ticker
// whose deadline is reached, in order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	target := f.now.Add(d)
	for {
		sort.Slice(f.waiters, func(i, j int) bool { return f.waiters[i].when.Before(f.waiters[j].when) })
		if len(f.waiters) == 0 || f.waiters[0].when.After(target) {
			break
		}
		if f.waiters[0].when.After(f.now) {
			f.now = f.waiters[0].when
		}
		f.fireLocked()
	}
	f.now = target
}

// Set jumps the fake time to t (forward only; earlier t is ignored).
func (f *Fake) Set(t time.Time) {
	if d := t.Sub(f.Now()); d > 0 {
		f.Advance(d)
	}
}

// fireLocked fires every waiter due at f.now.
func (f *Fake) fireLocked() {
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.when.After(f.now) {
			kept = append(kept, w)
			continue
		}
		select {
		case w.ch <- f.now:
		default:
		}
		if w.period > 0 {
			w.when = w.when.Add(w.period)
			if !w.when.After(f.now) {
				w.when = f.now.Add(w.period)
			}
			kept = append(kept, w)
		} else {
			w.active = false
		}
	}
	f.waiters = kept
}

// Waiters returns how many timers and tickers are armed; tests use it to
// know a goroutine has reached its wait before they Advance.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil waits (in real time) until at least n timers or tickers are
// armed. It is for tests only: it polls a channel signalled on every arm.
func (f *Fake) BlockUntil(n int) {
	for f.Waiters() < n {
		f.mu.Lock()
		ch := f.added
		f.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (w *fakeWaiter) C() <-chan time.Time { return w.ch }

func (w *fakeWaiter) Stop() bool {
	f := w.f
	f.mu.Lock()
	defer f.mu.Unlock()
	was := w.active
	if was {
		w.active = false
		for i, x := range f.waiters {
			if x == w {
				f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
				break
			}
		}
	}
	return was
}

func (w *fakeWaiter) Reset(d time.Duration) {
	f := w.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armLocked(w, d)
}
