package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// holdStore opens a store whose only checkpoints are the writer's own
// and the one a hold's end wakes.
func holdStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: filepath.Join(t.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fileSize is path's size, 0 if it does not exist.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// writeKiB creates config maps of 8 KiB, about kib KiB of them, named
// from prefix.
func writeKiB(t *testing.T, s *Store, prefix string, kib int) {
	t.Helper()
	data := map[string]string{"data": strings.Repeat("x", 8<<10)}
	for i := range kib / 8 {
		if err := s.Create(context.Background(), fixtures.ConfigMap("default", fmt.Sprint(prefix, i), data)); err != nil {
			t.Fatal(err)
		}
	}
}

// waitCheckpointed waits for the background checkpoint a hold's end
// wakes: the database grown past dbBefore and, if truncated, the log
// emptied.
func waitCheckpointed(t *testing.T, s *Store, dbBefore int64, truncated bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for (truncated && fileSize(t, s.path+"-wal") != 0) || fileSize(t, s.path) <= dbBefore {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after the hold ended: log %d bytes, database %d (was %d)",
				fileSize(t, s.path+"-wal"), fileSize(t, s.path), dbBefore)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHoldCheckpointsKeepsTheLogOutOfTheDatabase: without a hold, 8 MiB
// of writes reach the database file through the writer's automatic
// checkpoints; held, they stay in the log and the database file does not
// change, and reads still see them. Once the hold ends, a checkpoint
// beside the writer copies the log and truncates it.
func TestHoldCheckpointsKeepsTheLogOutOfTheDatabase(t *testing.T) {
	for _, hold := range []bool{false, true} {
		t.Run(fmt.Sprint("hold=", hold), func(t *testing.T) {
			s := holdStore(t)
			s.HoldCheckpoints(hold)
			db := fileSize(t, s.path)
			writeKiB(t, s, "c", 8<<10)
			grew := fileSize(t, s.path) > db
			if grew == hold {
				t.Fatalf("held %v: the database file went from %d to %d bytes after 8 MiB of writes", hold, db, fileSize(t, s.path))
			}
			if holds := s.CheckpointHolds(); holds != map[bool]int64{false: 0, true: 1}[hold] {
				t.Fatalf("CheckpointHolds() = %d", holds)
			}
			if !hold {
				return
			}
			if log := fileSize(t, s.path+"-wal"); log < 8<<20 {
				t.Fatalf("held: the log is %d bytes after 8 MiB of writes", log)
			}
			if _, _, err := s.GetRaw(context.Background(), "configmaps", "default", "c0"); err != nil {
				t.Fatalf("GetRaw of a write in the held log = %v", err)
			}
			s.HoldCheckpoints(false)
			// The writer applies the end before its next transaction.
			if err := s.Create(context.Background(), fixtures.ConfigMap("default", "d", nil)); err != nil {
				t.Fatal(err)
			}
			waitCheckpointed(t, s, db, true)
		})
	}
}

// TestHoldCheckpointsEndsAtTheLimit: a hold whose log reaches
// heldLogLimit ends by itself and the log is checkpointed, though nobody
// ended it; the next hold must be asked for again.
func TestHoldCheckpointsEndsAtTheLimit(t *testing.T) {
	t.Cleanup(func(was int64) func() { return func() { heldLogLimit = was } }(heldLogLimit)) // after the store's Close
	s := holdStore(t)
	s.HoldCheckpoints(true)
	db := fileSize(t, s.path)
	writeKiB(t, s, "c", 3<<10)
	if fileSize(t, s.path) != db {
		t.Fatal("held: the database file changed")
	}
	// The limit falls under the log: the next commit ends the hold.
	// (Create hands its write to the writer after this store.)
	heldLogLimit = 1 << 20
	writeKiB(t, s, "d", 8)
	waitCheckpointed(t, s, db, true)
	if s.hold.want.Load() {
		t.Fatal("the hold still asked for after the log passed the limit")
	}
	s.HoldCheckpoints(true)
	db = fileSize(t, s.path)
	writeKiB(t, s, "e", 128) // about 450 KiB of log, under the limit
	if s.CheckpointHolds() != 2 || fileSize(t, s.path) != db {
		t.Fatalf("a second hold: %d holds, database %d bytes (was %d); want 2, unchanged", s.CheckpointHolds(), fileSize(t, s.path), db)
	}
}

// TestHoldCheckpointsEndsOnAFailedCommit: a commit that fails (the disk
// full, here a page limit) ends the hold, so that a checkpoint can give
// the log's space back.
func TestHoldCheckpointsEndsOnAFailedCommit(t *testing.T) {
	s := holdStore(t)
	s.HoldCheckpoints(true)
	writeKiB(t, s, "c", 1<<10)
	setMaxPages(t, s, 0)
	big := map[string]string{"data": strings.Repeat("x", 64<<10)}
	if err := s.Create(context.Background(), fixtures.ConfigMap("default", "big", big)); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Create on a full database = %v; want ErrNoSpace", err)
	}
	if s.hold.want.Load() {
		t.Fatal("the hold still asked for after a failed commit")
	}
}
