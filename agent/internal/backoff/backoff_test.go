package backoff

import (
	"testing"
	"time"
)

func TestNextDoublesToMaxAndResets(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 5 * time.Second, NoJitter: true}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i, w := range want {
		if got := b.Next(); got != w*time.Second {
			t.Fatalf("Next() #%d = %v; want %v", i, got, w*time.Second)
		}
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
