package storage_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// TestSQLiteRevisionsPast32Bits starts a real SQLite file at revision
// 2^32+5 and checks that writes, reads, preconditions, lists and watches
// carry the revision whole. On armv7 (make test-arm) int is 32 bits, so a
// revision passed through an int anywhere on the way would wrap.
func TestSQLiteRevisionsPast32Bits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := storage.Open(ctx, storage.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	const base = int64(1)<<32 + 5
	rawExec(t, path, "UPDATE meta SET value = "+strconv.FormatInt(base, 10)+" WHERE key = 'revision'")

	s, err = storage.Open(ctx, storage.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v; want nil", err)
		}
	})
	if got := s.Revision(); got != base {
		t.Fatalf("Revision() after reopen = %d; want %d", got, base)
	}
	cm := storagetest.ConfigMap("default", "a", map[string]string{"k": "1"})
	if err := s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatInt(base+1, 10); cm.ResourceVersion != want {
		t.Fatalf("Create resourceVersion = %q; want %q", cm.ResourceVersion, want)
	}
	w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: base + 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// A precondition one below, at the same low 32 bits as base+1 minus
	// 2^32 (what a wrapped int would hold), must be refused.
	stale := storagetest.ConfigMap("default", "a", map[string]string{"k": "stale"})
	stale.ResourceVersion = strconv.FormatInt(base+1-1<<32, 10)
	if err := s.Update(ctx, stale); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Update with resourceVersion %s = %v; want ErrConflict", stale.ResourceVersion, err)
	}
	cm.Data["k"] = "2"
	if err := s.Update(ctx, cm); err != nil {
		t.Fatalf("Update at %s = %v; want nil", cm.ResourceVersion, err)
	}
	if ev := storagetest.Next(t, w, waitEvent); ev.Type != storage.Modified || ev.Revision != base+2 {
		t.Fatalf("watch event = %v@%d; want MODIFIED@%d", ev.Type, ev.Revision, base+2)
	}
	obj, err := s.Get(ctx, "configmaps", "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*api.ConfigMap)
	if want := strconv.FormatInt(base+2, 10); got.ResourceVersion != want || got.Data["k"] != "2" {
		t.Fatalf("Get = rv %q k=%q; want rv %q k=2", got.ResourceVersion, got.Data["k"], want)
	}
	if _, rev, err := s.List(ctx, "configmaps", storage.ListOptions{}); err != nil || rev != base+2 {
		t.Fatalf("List revision = %d, %v; want %d", rev, err, base+2)
	}
}
