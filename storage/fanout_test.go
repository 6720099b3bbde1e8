package storage_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/api/labels"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// TestWatchIndexedByNode: watches selecting one spec.nodeName (kept in
// the broadcaster's index rather than matched against every change) see
// exactly what the selector says — a pod bound to, moved onto or off,
// updated on and deleted from their node, with the Added/Deleted
// transitions — alongside plain watches, combined selectors, several
// watches of one node and the empty value (unbound pods); Stats counts
// them, and a stopped one is forgotten.
func TestWatchIndexedByNode(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		sel := func(f, l string) storage.WatchOptions {
			fs, err := fields.Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			ls, err := labels.Parse(l)
			if err != nil {
				t.Fatal(err)
			}
			return storage.WatchOptions{FromNow: true, Fields: fs, Labels: ls}
		}
		type want struct {
			typ storage.EventType
			pod string
		}
		watches := []struct {
			name string
			opts storage.WatchOptions
			want []want
		}{
			{"n1", sel("spec.nodeName=n1", ""), []want{{storage.Added, "p2"}, {storage.Added, "p1"}, {storage.Modified, "p1"}, {storage.Deleted, "p2"}, {storage.Deleted, "p1"}}},
			{"n1 again", sel("spec.nodeName=n1", ""), []want{{storage.Added, "p2"}, {storage.Added, "p1"}, {storage.Modified, "p1"}, {storage.Deleted, "p2"}, {storage.Deleted, "p1"}}},
			{"n2", sel("spec.nodeName=n2", ""), []want{{storage.Added, "p2"}, {storage.Added, "p3"}, {storage.Deleted, "p2"}}},
			{"unbound", sel("spec.nodeName=", ""), []want{{storage.Added, "p1"}, {storage.Deleted, "p1"}}},
			{"n1 and web", sel("spec.nodeName=n1", "app=web"), []want{{storage.Added, "p1"}, {storage.Modified, "p1"}, {storage.Deleted, "p1"}}},
			{"n1 and running", sel("spec.nodeName=n1,status.phase=Running", ""), []want{{storage.Added, "p1"}, {storage.Deleted, "p1"}}},
			{"n3", sel("spec.nodeName=n3", ""), nil},
			{"not n1", sel("spec.nodeName!=n1", ""), []want{{storage.Added, "p1"}, {storage.Deleted, "p1"}, {storage.Added, "p2"}, {storage.Added, "p3"}, {storage.Deleted, "p2"}}},
			{"other namespace", storage.WatchOptions{FromNow: true, Namespace: "other", Fields: sel("spec.nodeName=n1", "").Fields}, nil},
		}
		ws := make([]*storage.Watcher, len(watches))
		for i, w := range watches {
			var err error
			if ws[i], err = s.Watch(ctx, "pods", w.opts); err != nil {
				t.Fatal(err)
			}
			defer ws[i].Stop()
		}
		if n := s.Stats().Watchers; n != len(watches) {
			t.Errorf("Stats().Watchers = %d; want %d", n, len(watches))
		}
		put := func(name, node string, labels map[string]string, phase api.PodPhase, create bool) {
			t.Helper()
			p := storagetest.Pod("default", name, labels)
			p.Spec.NodeName, p.Status.Phase = node, phase
			var err error
			if create {
				err = s.Create(ctx, p)
			} else {
				err = s.Update(ctx, p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		web, db := map[string]string{"app": "web"}, map[string]string{"app": "db"}
		put("p1", "", web, "", true)                                          // unbound
		put("p2", "n1", db, "", true)                                         // created on n1
		put("p1", "n1", web, "", false)                                       // bound to n1
		put("p1", "n1", web, api.PodRunning, false)                           // updated on n1
		put("p2", "n2", db, "", false)                                        // moved n1 → n2
		put("p3", "n2", db, "", true)                                         // created on n2
		if _, err := s.Delete(ctx, "pods", "default", "p1", ""); err != nil { // deleted from n1
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, "pods", "default", "p2", ""); err != nil { // deleted from n2
			t.Fatal(err)
		}
		for i, w := range watches {
			got := storagetest.Collect(t, ws[i], len(w.want), waitEvent)
			storagetest.Quiet(t, ws[i], 20*time.Millisecond)
			for j := range w.want {
				p, err := api.DecodeObject(got[j].Value)
				name := ""
				if err == nil {
					name = p.GetObjectMeta().Name
				}
				if got[j].Type != w.want[j].typ || name != w.want[j].pod {
					t.Errorf("watch %s: event %d = %v %s; want %v %s", w.name, j, got[j].Type, name, w.want[j].typ, w.want[j].pod)
				}
			}
		}
		ws[0].Stop()
		if n := s.Stats().Watchers; n != len(watches)-1 {
			t.Errorf("after one Stop, Stats().Watchers = %d; want %d", n, len(watches)-1)
		}
	})
}

// BenchmarkPublishNodeWatches measures 100 concurrent pod creates with one
// with one watch per node open, as with an agent's assignment stream per
// node: each write is delivered only to its node's watch.
func BenchmarkPublishNodeWatches(b *testing.B) {
	for _, nodes := range []int{100, 10000} {
		b.Run(fmt.Sprintf("watches=%d", nodes), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := storagetest.Open(b, storage.Options{})
			for i := range nodes {
				fs, err := fields.Parse(fmt.Sprintf("spec.nodeName=n%d", i))
				if err != nil {
					b.Fatal(err)
				}
				w, err := s.Watch(ctx, "pods", storage.WatchOptions{FromNow: true, Fields: fs})
				if err != nil {
					b.Fatal(err)
				}
				go func() {
					for range w.Events() {
					}
				}()
			}
			// Each op: 100 concurrent creates (group commit).
			const per = 100
			errs := make([]error, per)
			b.ResetTimer()
			for i := range b.N {
				var wg sync.WaitGroup
				for j := range per {
					p := storagetest.Pod("default", fmt.Sprintf("p%d-%d", i, j), nil)
					p.Spec.NodeName = fmt.Sprintf("n%d", (i*per+j)%nodes)
					wg.Go(func() { errs[j] = s.Create(ctx, p) })
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
