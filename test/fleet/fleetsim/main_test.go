package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLockBoxRefusesASecondFleet: while one fleetsim holds the box's
// lock, a second is refused at once; after the first lets go, the next
// takes it.
func TestLockBoxRefusesASecondFleet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "skiff-fleetsim.lock")
	unlock, err := lockBox(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockBox(path); err == nil || !strings.Contains(err.Error(), "another fleetsim") {
		t.Fatalf("a second lockBox while the first holds it = %v, want a refusal naming another fleetsim", err)
	}
	unlock()
	unlock2, err := lockBox(path)
	if err != nil {
		t.Fatalf("lockBox after the first let go = %v", err)
	}
	unlock2()
}
