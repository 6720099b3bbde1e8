package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/api/labels"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

func TestListSelectors(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		for _, p := range []struct {
			ns, name, app, node string
			phase               api.PodPhase
		}{
			{"b", "web-2", "web", "n1", api.PodRunning},
			{"a", "web-1", "web", "n1", api.PodRunning},
			{"a", "db-1", "db", "n2", api.PodPending},
			{"b", "db-2", "db", "", api.PodPending},
			{"a", "batch", "", "n1", api.PodSucceeded},
		} {
			var l map[string]string
			if p.app != "" {
				l = map[string]string{"app": p.app}
			}
			pod := storagetest.Pod(p.ns, p.name, l)
			pod.Spec.NodeName, pod.Status.Phase = p.node, p.phase
			if err := s.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Create(ctx, storagetest.Node("n1", map[string]string{"zone": "x"})); err != nil {
			t.Fatal(err)
		}
		// Names the store keeps but that encoding/json would escape: a
		// selector on them is matched without the database's pre-filter
		// (fieldHint).
		for _, name := range []string{"a<b", "a&b"} {
			if err := s.Create(ctx, storagetest.Pod("c", name, nil)); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			resource, ns, labels, fields string
			want                         string // namespace/name, in order
		}{
			{"pods", "", "", "", "a/batch a/db-1 a/web-1 b/db-2 b/web-2 c/a&b c/a<b"},
			{"pods", "a", "", "", "a/batch a/db-1 a/web-1"},
			{"pods", "d", "", "", ""},
			{"pods", "", "", "metadata.name=a<b", "c/a<b"},
			{"pods", "c", "", "metadata.name=a&b", "c/a&b"},
			{"pods", "", "", "metadata.name=a", ""},
			{"pods", "", "", "metadata.namespace=c,spec.nodeName=", "c/a&b c/a<b"},
			{"pods", "", "app=web", "", "a/web-1 b/web-2"},
			{"pods", "", "app", "", "a/db-1 a/web-1 b/db-2 b/web-2"},
			{"pods", "", "!app", "", "a/batch c/a&b c/a<b"},
			{"pods", "", "app in (db,web),app!=db", "", "a/web-1 b/web-2"},
			{"pods", "", "", "spec.nodeName=n1", "a/batch a/web-1 b/web-2"},
			{"pods", "b", "", "spec.nodeName=n1", "b/web-2"},
			{"pods", "", "", "spec.nodeName=", "b/db-2 c/a&b c/a<b"},
			{"pods", "", "", "spec.nodeName!=n1", "a/db-1 b/db-2 c/a&b c/a<b"},
			{"pods", "", "app=db", "spec.nodeName=n2", "a/db-1"},
			{"pods", "", "", "status.phase=Running", "a/web-1 b/web-2"},
			{"pods", "", "", "metadata.name=db-2", "b/db-2"},
			{"pods", "", "", "metadata.namespace=a,spec.nodeName=n1", "a/batch a/web-1"},
			{"nodes", "", "zone=x", "", "/n1"},
			{"nodes", "", "", "spec.unschedulable=false", "/n1"},
		}
		for _, tt := range tests {
			ls, err := labels.Parse(tt.labels)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := fields.Parse(tt.fields)
			if err != nil {
				t.Fatal(err)
			}
			objs, rev, err := s.List(ctx, tt.resource, storage.ListOptions{Namespace: tt.ns, Labels: ls, Fields: fs})
			if err != nil {
				t.Fatalf("List(%s, ns=%q, %q, %q) = %v", tt.resource, tt.ns, tt.labels, tt.fields, err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetObjectMeta().Namespace+"/"+o.GetObjectMeta().Name)
			}
			if strings.Join(got, " ") != tt.want || rev != s.Revision() {
				t.Errorf("List(%s, ns=%q, %q, %q) = %q at %d; want %q at %d", tt.resource, tt.ns, tt.labels, tt.fields, got, rev, tt.want, s.Revision())
			}
		}
		if objs, _, err := s.List(ctx, "pods", storage.ListOptions{Labels: labels.Nothing()}); err != nil || len(objs) != 0 {
			t.Errorf("List(labels.Nothing()) = %d, %v; want 0, nil", len(objs), err)
		}
	})
}

// TestScan: Scan hands over what ListRaw returns, in its order and at
// its revision, and an error from the callback ends the scan at once and
// is returned as is.
func TestScan(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		for _, name := range []string{"c", "a", "b"} {
			if err := s.Create(ctx, storagetest.Pod("ns", name, nil)); err != nil {
				t.Fatal(err)
			}
		}
		want, wantRev, err := s.ListRaw(ctx, "pods", storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		rev, err := s.Scan(ctx, "pods", storage.ListOptions{}, func(v []byte) error {
			got = append(got, bytes.Clone(v))
			return nil
		})
		if err != nil || rev != wantRev || len(got) != len(want) {
			t.Fatalf("Scan = %d values at %d, %v; want %d at %d", len(got), rev, err, len(want), wantRev)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("Scan's value %d = %s; want %s", i, got[i], want[i])
			}
		}
		stop := errors.New("enough")
		calls := 0
		if _, err := s.Scan(ctx, "pods", storage.ListOptions{}, func([]byte) error { calls++; return stop }); err != stop || calls != 1 {
			t.Errorf("Scan with a failing callback = %v after %d calls; want the callback's error after 1", err, calls)
		}
	})
}

// A list and a watch from the list's revision together must reproduce
// the final state exactly, while writers run: the list is one snapshot.
func TestListThenWatchIsConsistent(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		var stop atomic.Bool
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					name := fmt.Sprintf("p%d", (g*7+i)%40)
					var err error
					switch i % 3 {
					case 0:
						err = s.Create(ctx, storagetest.Pod("default", name, nil))
					case 1:
						p := storagetest.Pod("default", name, nil)
						p.Status.Message = fmt.Sprint(i)
						err = s.Update(ctx, p)
					case 2:
						_, err = s.Delete(ctx, "pods", "default", name, "")
					}
					if err != nil && !isExpected(err) {
						t.Errorf("write %s: %v", name, err)
						return
					}
				}
			})
		}
		// Each cache lists, then applies a watch from the list's revision in a
		// goroutine of its own, as an informer does.
		type cache struct {
			mu    sync.Mutex
			state map[string][]byte
			last  int64 // revision applied
			w     *storage.Watcher
		}
		var caches []*cache
		for range 10 {
			// Let the writers move on between lists.
			for at := s.Revision(); s.Revision() < at+50; {
				time.Sleep(100 * time.Microsecond)
			}
			raw, rev, err := s.ListRaw(ctx, "pods", storage.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := &cache{state: map[string][]byte{}, last: rev}
			for _, v := range raw {
				obj, _ := api.DecodeObject(v)
				c.state[obj.GetObjectMeta().Namespace+"/"+obj.GetObjectMeta().Name] = v
			}
			if c.w, err = s.Watch(ctx, "pods", storage.WatchOptions{Revision: rev}); err != nil {
				t.Fatal(err)
			}
			defer c.w.Stop()
			go func() {
				for ev := range c.w.Events() {
					c.mu.Lock()
					applyEvents(t, c.state, []storage.Event{ev})
					c.last = ev.Revision
					c.mu.Unlock()
				}
			}()
			caches = append(caches, c)
		}
		stop.Store(true)
		wg.Wait()
		end := s.Revision()
		final, _, err := s.ListRaw(ctx, "pods", storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(waitEvent)
		for i, c := range caches {
			for {
				c.mu.Lock()
				last, ok := c.last, matches(c.state, final)
				c.mu.Unlock()
				if last >= end {
					if !ok {
						t.Errorf("cache %d: list + watch differs from the final list", i)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("cache %d: at revision %d; want %d (watch Err() = %v)", i, last, end, c.w.Err())
				}
				time.Sleep(time.Millisecond)
			}
		}
	})
}

func isExpected(err error) bool {
	return errors.Is(err, storage.ErrExists) || errors.Is(err, storage.ErrNotFound)
}

func matches(state map[string][]byte, final [][]byte) bool {
	if len(state) != len(final) {
		return false
	}
	for _, v := range final {
		obj, _ := api.DecodeObject(v)
		if !bytes.Equal(state[obj.GetObjectMeta().Namespace+"/"+obj.GetObjectMeta().Name], v) {
			return false
		}
	}
	return true
}

// TestSQLiteListThenWatchFromEmptyStore: an empty store lists at revision
// 0, and a watch from that revision must deliver a change committed
// between the List and the Watch (0 once meant "from now" and lost it).
func TestListThenWatchFromEmptyStore(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		for _, opts := range []storage.Options{{}, {WatchCacheSize: -1}} {
			s := b.Open(t, opts)
			objs, rev, err := s.List(ctx, "configmaps", storage.ListOptions{})
			if err != nil || len(objs) != 0 || rev != 0 {
				t.Fatalf("List(empty) = %d objects, revision %d, %v; want 0, 0, nil", len(objs), rev, err)
			}
			if err := s.Create(ctx, storagetest.ConfigMap("default", "a", nil)); err != nil {
				t.Fatal(err)
			}
			w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: rev})
			if err != nil {
				t.Fatal(err)
			}
			if ev := storagetest.Next(t, w, waitEvent); ev.Type != storage.Added || ev.Revision != 1 {
				t.Errorf("cache size %d: first event %v at %d; want Added at 1", opts.WatchCacheSize, ev.Type, ev.Revision)
			}
			w.Stop()
		}
		s := b.Open(t, storage.Options{})
		if _, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: 3, FromNow: true}); !errors.Is(err, storage.ErrInvalid) {
			t.Errorf("Watch(Revision 3, FromNow) = %v; want ErrInvalid", err)
		}
	})
}

// TestSQLiteListWatchRacingCreates: creates race an informer's start-up
// (List, then Watch from the list's revision) on a fresh store; every
// object must be seen exactly once, in the list or as an Added event.
func TestListWatchRacingCreates(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		const rounds, writers, perWriter = 20, 4, 5
		for round := range rounds {
			s := b.Open(t, storage.Options{WatchCacheSize: []int{0, -1}[round%2]})
			var wg sync.WaitGroup
			for g := range writers {
				wg.Go(func() {
					for i := range perWriter {
						if err := s.Create(ctx, storagetest.ConfigMap("default", fmt.Sprintf("c-%d-%d", g, i), nil)); err != nil {
							t.Error(err)
						}
					}
				})
			}
			objs, rev, err := s.List(ctx, "configmaps", storage.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: rev})
			if err != nil {
				t.Fatal(err)
			}
			seen := make(map[string]int)
			for _, o := range objs {
				seen[o.GetObjectMeta().Name]++
			}
			for _, ev := range storagetest.Collect(t, w, writers*perWriter-len(objs), waitEvent) {
				o, err := ev.Object()
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type != storage.Added {
					t.Errorf("round %d: event %v for %s; want only Added", round, ev.Type, o.GetObjectMeta().Name)
				}
				seen[o.GetObjectMeta().Name]++
			}
			wg.Wait()
			storagetest.Quiet(t, w, 20*time.Millisecond)
			w.Stop()
			for name, n := range seen {
				if n != 1 {
					t.Errorf("round %d (listed %d at revision %d): %s seen %d times; want once", round, len(objs), rev, name, n)
				}
			}
			if len(seen) != writers*perWriter {
				t.Errorf("round %d (listed %d at revision %d): saw %d objects; want %d", round, len(objs), rev, len(seen), writers*perWriter)
			}
		}
	})
}

// TestWatchCacheByteBoundReplaysFromLog: with a watch cache of a few
// kilobytes, large ConfigMaps push the older changes out of it, and a
// watch from the start still sees every change, in order (the older ones
// read back from the change log).
func TestWatchCacheByteBoundReplaysFromLog(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{WatchCacheBytes: 16 << 10})
		big := strings.Repeat("x", 4<<10)
		const n = 20
		for i := range n {
			if err := s.Create(ctx, storagetest.ConfigMap("default", fmt.Sprintf("big-%02d", i), map[string]string{"v": big})); err != nil {
				t.Fatal(err)
			}
		}
		w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: 0})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		for i, ev := range storagetest.Collect(t, w, n, waitEvent) {
			o, err := ev.Object()
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("big-%02d", i); ev.Type != storage.Added || o.GetObjectMeta().Name != want {
				t.Fatalf("event %d: %v %s; want Added %s", i, ev.Type, o.GetObjectMeta().Name, want)
			}
		}
	})
}
