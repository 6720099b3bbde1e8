package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

func TestBackupDuringWrites(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		var stop atomic.Bool
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					if err := s.Create(ctx, storagetest.ConfigMap("default", fmt.Sprintf("g%d-%d", g, i), nil)); err != nil {
						t.Errorf("Create = %v", err)
						return
					}
				}
			})
		}
		for s.Revision() < 500 {
			time.Sleep(time.Millisecond)
		}
		path := filepath.Join(t.TempDir(), "backup.db")
		if err := s.Backup(ctx, path); err != nil {
			t.Fatalf("Backup(%s) = %v; want nil", path, err)
		}
		stop.Store(true)
		wg.Wait()

		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("backup mode = %v; want 0600", st.Mode().Perm())
		}
		bk, err := storage.Open(ctx, storage.Options{Path: path})
		if err != nil {
			t.Fatalf("Open(backup) = %v; want nil", err)
		}
		defer bk.Close()
		at := bk.Revision()
		if at < 500 || at >= s.Revision() {
			t.Errorf("backup revision = %d; want in [500, %d)", at, s.Revision())
		}
		// Only creates happened, so the backup must hold exactly the objects
		// created at or before its revision.
		orig, _, err := s.List(ctx, "configmaps", storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, o := range orig {
			if rv, _ := strconv.ParseInt(o.GetObjectMeta().ResourceVersion, 10, 64); rv <= at {
				want[o.GetObjectMeta().Name] = true
			}
		}
		got, _, err := bk.List(ctx, "configmaps", storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || int64(len(got)) != at {
			t.Errorf("backup holds %d objects; want %d (= revision %d)", len(got), len(want), at)
		}
		for _, o := range got {
			if !want[o.GetObjectMeta().Name] {
				t.Errorf("backup holds %s, created after revision %d", o.GetObjectMeta().Name, at)
			}
		}
		// The change log came along: a watch can resume in the backup.
		w, err := bk.Watch(ctx, "configmaps", storage.WatchOptions{Revision: at - 1})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if ev := storagetest.Next(t, w, waitEvent); ev.Revision != at {
			t.Errorf("backup watch first event at %d; want %d", ev.Revision, at)
		}
	})
}

func TestBackupRefusesToOverwrite(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t, storage.Options{})
		path := filepath.Join(t.TempDir(), "exists.db")
		if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Backup(context.Background(), path); !errors.Is(err, fs.ErrExist) {
			t.Errorf("Backup(existing) = %v; want fs.ErrExist", err)
		}
		if got, _ := os.ReadFile(path); string(got) != "keep me" {
			t.Errorf("Backup(existing) changed the file to %q", got)
		}
	})
}
