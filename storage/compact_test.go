package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

func TestCompactHonoursMinRevisionsAndMinAge(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s := b.Open(t, storage.Options{
			Clock:               fake,
			CompactMinRevisions: 50,
			CompactMinAge:       5 * time.Minute,
			CompactInterval:     -1,
			CheckpointInterval:  -1,
		})
		n := 0
		write := func(count int) {
			for range count {
				n++
				if err := s.Create(ctx, storagetest.ConfigMap("default", fmt.Sprint("c", n), nil)); err != nil {
					t.Fatal(err)
				}
			}
		}
		steps := []struct {
			name    string
			advance time.Duration // before writing
			writes  int
			want    int64 // compacted revision after Compact
		}{
			{"all young", 0, 100, 0},
			{"age protects the young half", 10 * time.Minute, 100, 100},
			{"nothing new is old enough", time.Minute, 0, 100},
			{"count protects the newest 50", 10 * time.Minute, 0, 150},
			{"both: count and age", 10 * time.Minute, 10, 160},
			{"age: old ones go, new writes stay", 0, 100, 200},
		}
		for _, st := range steps {
			fake.Advance(st.advance)
			write(st.writes)
			got, err := s.Compact(ctx)
			if err != nil || got != st.want {
				t.Fatalf("%s: Compact() = %d, %v; want %d, nil", st.name, got, err, st.want)
			}
			if s.CompactedRevision() != st.want {
				t.Fatalf("%s: CompactedRevision() = %d; want %d", st.name, s.CompactedRevision(), st.want)
			}
		}

		// The boundary: from the compacted revision a watch replays the log;
		// one below it is gone.
		c := s.CompactedRevision()
		if _, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: c - 1}); !errors.Is(err, storage.ErrCompacted) {
			t.Errorf("Watch(from %d) = %v; want ErrCompacted", c-1, err)
		}
		w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: c})
		if err != nil {
			t.Fatalf("Watch(from %d) = %v; want nil", c, err)
		}
		defer w.Stop()
		if ev := storagetest.Next(t, w, waitEvent); ev.Revision != c+1 {
			t.Errorf("Watch(from %d) first event at %d; want %d", c, ev.Revision, c+1)
		}
		// Live objects are never compacted away.
		objs, _, err := s.List(ctx, "configmaps", storage.ListOptions{})
		if err != nil || len(objs) != n {
			t.Errorf("List() = %d objects, %v; want %d", len(objs), err, n)
		}
	})
}

func TestCompactBackgroundLoop(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		s := b.Open(t, storage.Options{
			Clock:               fake,
			CompactMinRevisions: 10,
			CompactMinAge:       time.Minute,
			CompactInterval:     time.Minute,
			CheckpointInterval:  30 * time.Second,
		})
		fake.BlockUntil(2) // both tickers armed
		for i := range 30 {
			if err := s.Create(ctx, storagetest.Node(fmt.Sprint("n", i), nil)); err != nil {
				t.Fatal(err)
			}
		}
		fake.Advance(2 * time.Minute)
		deadline := time.Now().Add(waitEvent)
		for s.CompactedRevision() != 20 {
			if time.Now().After(deadline) {
				t.Fatalf("CompactedRevision() = %d after the loop ran; want 20", s.CompactedRevision())
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
