package storage_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

func TestCloseWithWritesInFlight(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "state.db")
		s, err := storage.Open(ctx, storage.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{FromNow: true})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for range w.Events() {
			}
		}()
		var mu sync.Mutex
		var acked []string
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := 0; ; i++ {
					name := fmt.Sprintf("g%d-%d", g, i)
					err := s.Create(ctx, storagetest.ConfigMap("default", name, nil))
					if errors.Is(err, storage.ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("Create(%s) = %v; want nil or ErrClosed", name, err)
						return
					}
					mu.Lock()
					acked = append(acked, name)
					mu.Unlock()
					if _, _, err := s.GetRaw(ctx, "configmaps", "default", name); err != nil && !errors.Is(err, storage.ErrClosed) {
						t.Errorf("GetRaw(%s) = %v; want nil or ErrClosed", name, err)
					}
				}
			})
		}
		time.Sleep(50 * time.Millisecond)
		if err := s.Close(); err != nil {
			t.Fatalf("Close() = %v; want nil", err)
		}
		wg.Wait()
		if err := s.Close(); err != nil {
			t.Errorf("second Close() = %v; want nil", err)
		}
		if !errors.Is(w.Err(), storage.ErrClosed) {
			t.Errorf("watcher Err() after Close = %v; want ErrClosed", w.Err())
		}
		for _, call := range []struct {
			name string
			err  error
		}{
			{"Create", s.Create(ctx, storagetest.ConfigMap("default", "late", nil))},
			{"Get", func() error { _, err := s.Get(ctx, "configmaps", "default", "g0-0"); return err }()},
			{"List", func() error { _, _, err := s.List(ctx, "configmaps", storage.ListOptions{}); return err }()},
			{"Compact", func() error { _, err := s.Compact(ctx); return err }()},
			{"Backup", s.Backup(ctx, filepath.Join(t.TempDir(), "b.db"))},
		} {
			if !errors.Is(call.err, storage.ErrClosed) {
				t.Errorf("%s after Close = %v; want ErrClosed", call.name, call.err)
			}
		}

		s, err = storage.Open(ctx, storage.Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, name := range acked {
			if _, _, err := s.GetRaw(ctx, "configmaps", "default", name); err != nil {
				t.Fatalf("acknowledged %s after reopen: %v", name, err)
			}
		}
		t.Logf("%d acknowledged writes survived Close", len(acked))
	})
}
