package auth_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/auth"
)

func TestLimiterBurstAndRefill(t *testing.T) {
	clk := clock.NewFake(t0)
	l := auth.NewLimiter(auth.LimiterConfig{Every: 10 * time.Second, Burst: 3, Clock: clk})
	steps := []struct {
		advance time.Duration
		key     string
		want    bool
	}{
		{0, "1.2.3.4", true},
		{0, "1.2.3.4", true},
		{0, "1.2.3.4", true},
		{0, "1.2.3.4", false}, // burst spent
		{0, "5.6.7.8", true},  // other keys are independent
		{9 * time.Second, "1.2.3.4", false},
		{time.Second, "1.2.3.4", true}, // one earned back after 10s
		{0, "1.2.3.4", false},
		{time.Hour, "1.2.3.4", true}, // refill caps at the burst
		{0, "1.2.3.4", true},
		{0, "1.2.3.4", true},
		{0, "1.2.3.4", false},
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		if got := l.Allow(s.key); got != s.want {
			t.Errorf("step %d: Allow(%q) at +%v = %v; want %v", i, s.key, clk.Now().Sub(t0), got, s.want)
		}
	}
}

func TestLimiterBoundedKeys(t *testing.T) {
	clk := clock.NewFake(t0)
	l := auth.NewLimiter(auth.LimiterConfig{Every: time.Minute, Burst: 1, MaxKeys: 100, Clock: clk})
	if !l.Allow("victim") || l.Allow("victim") {
		t.Fatal("Allow(victim) twice = want true then false")
	}
	for i := range 1000 {
		l.Allow(fmt.Sprint("10.0.", i/256, ".", i%256))
	}
	if got := l.Len(); got != 100 {
		t.Errorf("Len() after 1001 keys = %d; want 100", got)
	}
	// The least recently seen key was forgotten and starts afresh.
	if !l.Allow("victim") {
		t.Error("Allow(victim) after eviction = false; want true (a fresh bucket)")
	}
}

// steppedClock is a clock.Clock whose time a test sets freely, backwards
// included (clock.Fake only moves forward).
type steppedClock struct {
	*clock.Fake
	at time.Time
}

func (c *steppedClock) Now() time.Time { return c.at }

func TestLimiterClockStepsBack(t *testing.T) {
	clk := &steppedClock{Fake: clock.NewFake(t0), at: t0}
	l := auth.NewLimiter(auth.LimiterConfig{Every: 10 * time.Second, Burst: 1, Clock: clk})
	if !l.Allow("k") {
		t.Fatal("first Allow = false")
	}
	clk.at = t0.Add(-time.Hour) // NTP fixes a clock that ran ahead
	if l.Allow("k") {
		t.Error("Allow right after the clock stepped back = true; want false (no refill)")
	}
	// Refill resumes from the new time, not from the old, later one.
	clk.at = clk.at.Add(10 * time.Second)
	if !l.Allow("k") {
		t.Error("Allow 10s after the step back = false; want true")
	}
}

func TestLimiterDefaults(t *testing.T) {
	l := auth.NewLimiter(auth.LimiterConfig{Clock: clock.NewFake(t0)})
	n := 0
	for l.Allow("k") {
		n++
	}
	if n != auth.DefaultLimiterBurst {
		t.Errorf("zero config allowed a burst of %d; want %d", n, auth.DefaultLimiterBurst)
	}
}
