package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// TestCheckpointerWakesEveryWrites: the writer wakes the checkpointer once
// checkpointEveryWrites revisions have passed since its last run, never
// before, and never blocks on a wake-up already pending.
func TestCheckpointerWakesEveryWrites(t *testing.T) {
	c := newCheckpointer()
	c.committed(checkpointEveryWrites - 1)
	if len(c.kick) != 0 {
		t.Fatalf("woken after %d writes; want %d", checkpointEveryWrites-1, checkpointEveryWrites)
	}
	c.committed(checkpointEveryWrites)
	c.committed(checkpointEveryWrites + 1) // pending already: does not block
	if len(c.kick) != 1 {
		t.Fatalf("pending wake-ups = %d; want 1", len(c.kick))
	}
	<-c.kick
	c.last.Store(checkpointEveryWrites + 1)
	c.committed(2 * checkpointEveryWrites)
	if len(c.kick) != 0 {
		t.Errorf("woken %d writes after the last run; want %d", checkpointEveryWrites-1, checkpointEveryWrites)
	}
	var off checkpointer // a backend without one (tests' zero value)
	off.committed(1 << 40)
}

// TestCheckpointerCopiesTheLog: the writer's connection checkpoints only
// past the backstop, and the log is copied into the database beside it
// as writes go on.
func TestCheckpointerCopiesTheLog(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.be.(*sqliteBackend)
	var pages int
	if err := s.w.conn.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != writerAutoCheckpointPages {
		t.Errorf("writer's wal_autocheckpoint = %d; want %d", pages, writerAutoCheckpointPages)
	}
	if b.ckpt.runs.Load() != 0 {
		t.Fatalf("checkpointed %d times before any write", b.ckpt.runs.Load())
	}
	for i := range 3 * checkpointEveryWrites {
		if err := s.Create(ctx, fixtures.Pod("default", fmt.Sprintf("p%04d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(testenv.Bound(10 * time.Second))
	for b.ckpt.runs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no background checkpoint after %d writes", 3*checkpointEveryWrites)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if f, d := b.ckpt.lastFrames.Load(), b.ckpt.lastDone.Load(); f == 0 || d != f {
		t.Errorf("background checkpoint copied %d of %d frames; want all of a non-empty log", d, f)
	}
	if _, err := s.Get(ctx, "pods", "default", "p0000"); err != nil {
		t.Error(err)
	}
}
