package eviction

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpenV2WatchesWithoutPSI: on a kernel without PSI (no
// memory.pressure) the pods' root is still watched through its
// memory.events; with neither file there is nothing to arm.
func TestOpenV2WatchesWithoutPSI(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "memory.events"), []byte("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := openV2Watches(SignalAllocatableMemoryAvailable, dir)
	if err != nil || len(ws) != 1 || ws[0].psi {
		t.Fatalf("openV2Watches(memory.events only) = %+v, %v; want the events watch alone", ws, err)
	}
	ws[0].f.Close()
	if ws, err := openV2Watches(SignalAllocatableMemoryAvailable, t.TempDir()); err == nil {
		t.Errorf("openV2Watches(empty dir) = %+v; want an error", ws)
	}
}
