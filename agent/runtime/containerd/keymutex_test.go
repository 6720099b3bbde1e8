package containerd

import (
	"sync"
	"testing"
)

// TestKeyMutex: one key's holders exclude each other, other keys do not
// wait for them, and nothing is kept once every holder is gone.
func TestKeyMutex(t *testing.T) {
	var m keyMutex
	unlockA := m.lock("a")
	// Another key is free while "a" is held.
	done := make(chan struct{})
	go func() {
		m.lock("b")()
		close(done)
	}()
	<-done
	// The same key waits.
	got := make(chan struct{})
	go func() {
		u := m.lock("a")
		close(got)
		u()
	}()
	select {
	case <-got:
		t.Fatal("a second holder of key a got it while the first held it")
	default:
	}
	unlockA()
	<-got
	var wg sync.WaitGroup
	counter := 0
	for range 50 {
		wg.Go(func() {
			u := m.lock("c")
			counter++ // the race detector fails this if c does not exclude
			u()
		})
	}
	wg.Wait()
	if counter != 50 {
		t.Errorf("counter = %d; want 50", counter)
	}
	if n := m.held(); n != 0 {
		t.Errorf("%d keys kept after every holder unlocked; want 0", n)
	}
}
