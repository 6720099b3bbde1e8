package clock

import (
	"context"
	"testing"
	"time"
)

func TestFakeTimerFiresOnlyWhenAdvancedPastDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	tm := f.NewTimer(10 * time.Second)
	f.Advance(9 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("timer fired at 9s; want 10s")
	default:
	}
	f.Advance(time.Second)
	select {
	case got := <-tm.C():
		if want := start.Add(10 * time.Second); !got.Equal(want) {
			t.Fatalf("timer fired at %v; want %v", got, want)
		}
	default:
		t.Fatal("timer did not fire at 10s")
	}
	if tm.Stop() {
		t.Fatal("Stop() after firing = true; want false")
	}
}

func TestFakeTickerAndStop(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	tk := f.NewTicker(time.Second)
	n := 0
	for i := 0; i < 5; i++ {
		f.Advance(time.Second)
		select {
		case <-tk.C():
			n++
		default:
		}
	}
	if n != 5 {
		t.Fatalf("ticks = %d; want 5", n)
	}
	tk.Stop()
	f.Advance(10 * time.Second)
	select {
	case <-tk.C():
		t.Fatal("stopped ticker fired")
	default:
	}
	if f.Waiters() != 0 {
		t.Fatalf("Waiters() = %d; want 0", f.Waiters())
	}
}

func TestSleepCancelled(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- Sleep(ctx, f, time.Hour) }()
	f.BlockUntil(1)
	cancel()
	if <-done {
		t.Fatal("Sleep returned true after cancel; want false")
	}
	go func() { done <- Sleep(context.Background(), f, time.Minute) }()
	f.BlockUntil(1)
	f.Advance(time.Minute)
	if !<-done {
		t.Fatal("Sleep returned false after the duration passed; want true")
	}
}
