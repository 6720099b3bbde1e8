package backoff

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

func TestNextDoublesToMaxAndResets(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 5 * time.Second, NoJitter: true}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i, w := range want {
		if got := b.Next(); got != w*time.Second {
			t.Fatalf("Next() #%d = %v; want %v", i, got, w*time.Second)
		}
	}
	if got := b.Failures(); got != len(want) {
		t.Fatalf("Failures() = %d; want %d", got, len(want))
	}
	b.Reset()
	if got := b.Next(); got != time.Second {
		t.Fatalf("Next() after Reset = %v; want 1s", got)
	}
}

func TestJitterStaysInUpperHalf(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 8 * time.Second}
	step := time.Second
	for i := 0; i < 200; i++ {
		got := b.Next()
		if got < step/2 || got > step {
			t.Fatalf("Next() #%d = %v; want in [%v, %v]", i, got, step/2, step)
		}
		step = min(2*step, 8*time.Second)
	}
}

func TestZeroValueUsesDefaults(t *testing.T) {
	var b Backoff
	if got := b.Next(); got < DefaultMin/2 || got > DefaultMin {
		t.Fatalf("zero Backoff Next() = %v; want about %v", got, DefaultMin)
	}
}

// TestNeverOverflows: a Max near the largest duration and a million
// failures never give a negative or too long delay.
func TestNeverOverflows(t *testing.T) {
	for _, tc := range []struct{ min, max time.Duration }{
		{time.Second, time.Duration(math.MaxInt64)},
		{time.Nanosecond, time.Duration(math.MaxInt64 - 1)},
		{time.Hour, time.Minute}, // Max below Min: Min wins
	} {
		b := Backoff{Min: tc.min, Max: tc.max}
		lo, hi := b.bounds()
		for i := 0; i < 1_000_000; i++ {
			if d := b.Next(); d < lo/2 || d > hi {
				t.Fatalf("Backoff{%v, %v}.Next() #%d = %v; want in [%v, %v]", tc.min, tc.max, i, d, lo/2, hi)
			}
		}
	}
}

// steppingClock is a fake clock whose timers fire at once, moving its
// time forward by what they asked: it records every wait, so a day of
// back-off runs in milliseconds, deterministically.
type steppingClock struct {
	now   time.Time
	waits []time.Duration
}

func (c *steppingClock) Now() time.Time { return c.now }

func (c *steppingClock) NewTimer(d time.Duration) clock.Timer {
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return firedTimer(ch)
}

func (c *steppingClock) NewTicker(time.Duration) clock.Ticker { panic("unused") }

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (t firedTimer) Stop() bool          { return false }
func (t firedTimer) Reset(time.Duration) {}

// TestDayLongOutage runs BackOff through 24 hours of failures on a fake
// clock: every wait is within bounds, the attempts per hour once capped
// stay under 2·1h/Max, and the first success resets the delay to Min.
func TestDayLongOutage(t *testing.T) {
	start := time.Unix(0, 0)
	clk := &steppingClock{now: start}
	b := Backoff{Min: time.Second, Max: 30 * time.Second, Clock: clk}
	ctx := context.Background()
	down := errors.New("server away")
	perHour := map[int]int{}
	for clk.Now().Sub(start) < 24*time.Hour {
		if !b.BackOff(ctx, down) {
			t.Fatal("BackOff returned false with ctx alive")
		}
		if h := int(clk.Now().Sub(start) / time.Hour); h < 24 {
			perHour[h]++
		}
	}
	for i, d := range clk.waits {
		if d < b.Min/2 || d > b.Max {
			t.Fatalf("wait #%d = %v; want within [%v, %v]", i, d, b.Min/2, b.Max)
		}
	}
	limit := int(2*time.Hour/b.Max) + 10
	for h, n := range perHour {
		if n > limit || n < int(time.Hour/b.Max) {
			t.Errorf("hour %d: %d attempts; want between %d and %d", h, n, int(time.Hour/b.Max), limit)
		}
	}
	if !b.BackOff(ctx, nil) {
		t.Fatal("BackOff(nil) = false; want true")
	}
	if b.Failures() != 0 {
		t.Fatalf("Failures() after success = %d; want 0", b.Failures())
	}
	if d := b.Next(); d > b.Min {
		t.Fatalf("first delay after recovery = %v; want ≤ %v", d, b.Min)
	}
}

func TestBackOffStopsWhenCtxEnds(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	b := Backoff{Min: time.Minute, Max: time.Hour, Clock: clk}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() { done <- b.BackOff(ctx, errors.New("x")) }()
	clk.BlockUntil(1)
	cancel()
	if ok := <-done; ok {
		t.Fatal("BackOff after cancel = true; want false")
	}
}
