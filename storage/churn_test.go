package storage_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// diskSize returns the size of the database file plus its WAL.
func diskSize(t *testing.T, path string) (db, wal int64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := os.Stat(path + "-wal"); err == nil {
		wal = w.Size()
	}
	return st.Size(), wal
}

// TestSQLiteChurnBounded writes 100k+ revisions over 200 live pods
// (updates, deletes, re-creates) with compaction running, and checks that
// the file and its WAL stay proportional to what must be kept: the live
// objects plus the retained history.
func TestSQLiteChurnBounded(t *testing.T) {
	ctx := context.Background()
	const live, minRevisions = 200, 1000
	revisions := 100_000
	if raceEnabled || testing.Short() {
		// The race detector and -short (make test-arm, where armv7 and
		// arm64 run under qemu) write 15 000: one compaction mid-run and
		// one at the end.
		revisions = 15_000
	}
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := storagetest.Open(t, storage.Options{
		Clock:               fake,
		CompactMinRevisions: minRevisions,
		CompactMinAge:       time.Minute,
		CompactInterval:     -1, // compacted below, after stepping the clock
		CheckpointInterval:  -1,
	})
	pods := make([]*api.Pod, live)
	for i := range pods {
		pods[i] = storagetest.Pod("default", fmt.Sprint("p", i), map[string]string{"app": "churn"})
		if err := s.Create(ctx, pods[i]); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	var next atomic.Int64
	var peakDB, peakWAL int64
	var mu sync.Mutex // serializes compaction and size checks
	compact := func() {
		mu.Lock()
		defer mu.Unlock()
		db, wal := diskSize(t, s.Path())
		peakDB, peakWAL = max(peakDB, db), max(peakWAL, wal)
		fake.Advance(2 * time.Minute)
		if _, err := s.Compact(ctx); err != nil {
			t.Errorf("Compact() = %v", err)
		}
	}
	// Each writer owns the pods i with i%writers == g, like a controller
	// updating the objects it caches: updates carry the resourceVersion.
	const writers = 32
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for round := 0; ; round++ {
				for i := g; i < live; i += writers {
					n := next.Add(1)
					if n > int64(revisions) {
						return
					}
					p := pods[i]
					var err error
					if round%10 == 9 { // delete and re-create under the same name
						if _, err = s.Delete(ctx, "pods", "default", p.Name, p.ResourceVersion); err == nil {
							pods[i] = storagetest.Pod("default", p.Name, map[string]string{"app": "churn"})
							err = s.Create(ctx, pods[i])
						}
					} else {
						p.Status.Message = fmt.Sprint("revision ", n)
						p.Status.Phase = api.PodRunning
						err = s.Update(ctx, p)
					}
					if err != nil {
						t.Errorf("churn %s: %v", p.Name, err)
						return
					}
					if n%10_000 == 0 {
						compact()
					}
				}
			}
		})
	}
	wg.Wait()
	compact()
	elapsed := time.Since(start)

	raw, _, err := s.ListRaw(ctx, "pods", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var liveBytes int64
	for _, v := range raw {
		liveBytes += int64(len(v))
	}
	// What must be kept: each live object (value + columns + index) and
	// each retained change (value + columns), at about the value size.
	mustKeep := liveBytes + int64(minRevisions)*liveBytes/int64(len(raw))
	db, wal := diskSize(t, s.Path())
	ratio := float64(db+wal) / float64(mustKeep)
	t.Logf("%d revisions in %v (%.0f/s); live %d objects %d KiB; must keep ~%d KiB; file %d KiB + WAL %d KiB = %.2fx; peak file %d KiB, WAL %d KiB",
		s.Revision(), elapsed.Round(time.Millisecond), float64(s.Revision())/elapsed.Seconds(),
		len(raw), liveBytes>>10, mustKeep>>10, db>>10, wal>>10, ratio, peakDB>>10, peakWAL>>10)
	if len(raw) != live {
		t.Errorf("live objects = %d; want %d", len(raw), live)
	}
	if ratio > 3 {
		t.Errorf("file + WAL = %d bytes, %.2fx what must be kept (%d); want <= 3x", db+wal, ratio, mustKeep)
	}
	if limit := int64(32 << 20); peakDB > limit || peakWAL > limit {
		t.Errorf("peak file %d / WAL %d bytes; want both <= %d", peakDB, peakWAL, limit)
	}
}
