package storage_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// TestFollowListsWatchesAndListsAgain: Follow hands on a list, then each
// change with its revision; when the watch ends it says why and lists
// again, and it returns when its context ends.
func TestFollowListsWatchesAndListsAgain(t *testing.T) {
	s := storagetest.Open(t, storage.Options{})
	ctx := context.Background()
	if err := s.Create(ctx, storagetest.ConfigMap("default", "a", nil)); err != nil {
		t.Fatal(err)
	}
	type change struct {
		typ  storage.EventType
		name string
		rev  int64
	}
	var mu sync.Mutex
	var lists [][]string
	var changes []change
	var relists int
	watches := 0
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Follow(fctx, "configmaps", storage.Following{
			Listed: func(objs []api.Object, rev int64) {
				var names []string
				for _, o := range objs {
					names = append(names, o.GetObjectMeta().Name)
				}
				mu.Lock()
				lists = append(lists, names)
				mu.Unlock()
			},
			Consume: func(w *storage.Watcher) {
				mu.Lock()
				watches++
				first := watches == 1
				mu.Unlock()
				for ev := range w.Events() {
					obj, _ := ev.Object()
					mu.Lock()
					changes = append(changes, change{ev.Type, obj.GetObjectMeta().Name, ev.Revision})
					mu.Unlock()
					if first {
						return // the first watch ends after one change
					}
				}
			},
			Failed: func(err error) {
				if !errors.Is(err, storage.ErrRelist) {
					t.Errorf("Failed(%v); want ErrRelist only", err)
				}
				mu.Lock()
				relists++
				mu.Unlock()
			},
		})
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: lists %v, changes %v, relists %d", what, lists, changes, relists)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("the first list", func() bool { return len(lists) == 1 && watches == 1 })
	if err := s.Create(ctx, storagetest.ConfigMap("default", "b", nil)); err != nil {
		t.Fatal(err)
	}
	wait("the second list", func() bool { return len(lists) == 2 && watches == 2 })
	if _, err := s.Delete(ctx, "configmaps", "default", "a", ""); err != nil {
		t.Fatal(err)
	}
	wait("the deletion", func() bool { return len(changes) == 2 })
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(lists[0], []string{"a"}) || !slices.Equal(lists[1], []string{"a", "b"}) {
		t.Errorf("lists %v; want [a] then [a b]", lists)
	}
	if changes[0].typ != storage.Added || changes[0].name != "b" || changes[1].typ != storage.Deleted || changes[1].name != "a" || changes[1].rev <= changes[0].rev {
		t.Errorf("changes %+v; want b added, then a deleted at a later revision", changes)
	}
	if relists != 1 {
		t.Errorf("%d relists; want 1 (the first watch's end; none when the context ended)", relists)
	}
}
