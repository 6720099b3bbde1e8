package storage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// TestWatchesResumeAcrossReopenWithoutReplay: after the Store reopens,
// a watch resumed from before Open whose history has left the warmed
// cache resumes without reading the change log when nothing it selects
// changed since (a quiet node's assignment stream, an unchanged
// resource's watch), as it would have before the restart, and is still
// told to list again or given its replay when something did.
func TestWatchesResumeAcrossReopenWithoutReplay(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		opts := b.Fresh(t, storage.Options{WatchCacheSize: 16, CompactInterval: -1})
		s, err := storage.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { s.Close() }()
		on := func(node string, rev int64) storage.WatchOptions {
			fs, err := fields.Parse("spec.nodeName=" + node)
			if err != nil {
				t.Fatal(err)
			}
			return storage.WatchOptions{Fields: fs, Revision: rev}
		}
		create := func(name, node string) {
			t.Helper()
			p := storagetest.Pod("default", name, nil)
			p.Spec.NodeName = node
			if err := s.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		create("a", "n1")
		create("b", "n2")
		create("mover", "n4")
		if err := s.Create(ctx, storagetest.ConfigMap("default", "cm", nil)); err != nil {
			t.Fatal(err)
		}
		quiet := s.Revision()
		// After quiet: n2's pod changes, the mover leaves n4, and enough
		// other changes follow to leave quiet well outside a 16-change
		// cache after the reopen.
		if _, err := s.GuaranteedUpdate(ctx, "pods", "default", "b", func(o api.Object) (api.Object, error) {
			o.(*api.Pod).Labels = map[string]string{"changed": "yes"}
			return o, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GuaranteedUpdate(ctx, "pods", "default", "mover", func(o api.Object) (api.Object, error) {
			o.(*api.Pod).Spec.NodeName = "n5"
			return o, nil
		}); err != nil {
			t.Fatal(err)
		}
		for i := range 30 {
			create(fmt.Sprint("busy", i), "n9")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = storage.Open(ctx, opts); err != nil {
			t.Fatal(err)
		}
		if r := s.ResourceRevision("configmaps"); r != quiet {
			t.Errorf("after the reopen ResourceRevision(configmaps) = %d; want %d, cm's creation", r, quiet)
		}

		resumes := func(what string, resource string, o storage.WatchOptions) *storage.Watcher {
			t.Helper()
			reads := s.Stats().ReplayReads
			w, err := s.Watch(ctx, resource, o)
			if err != nil {
				t.Fatalf("%s from %d, before the reopen = %v; want it resumed", what, o.Revision, err)
			}
			t.Cleanup(w.Stop)
			if ev, ok := w.Next(); ok {
				t.Errorf("%s from %d gave %v@%d; want nothing (nothing it selects changed since)", what, o.Revision, ev.Type, ev.Revision)
			}
			if n := s.Stats().ReplayReads - reads; n != 0 {
				t.Errorf("%s from %d read the change log %d times; want 0", what, o.Revision, n)
			}
			return w
		}
		w1 := resumes("n1's assignment stream", "pods", on("n1", quiet))
		resumes("a never-seen node's stream", "pods", on("n3", quiet))
		wcm := resumes("the configmaps watch", "configmaps", storage.WatchOptions{Revision: quiet})

		for _, node := range []string{"n2", "n4", "n5"} {
			if w, err := s.Watch(ctx, "pods", on(node, quiet)); !errors.Is(err, storage.ErrCompacted) {
				if w != nil {
					w.Stop()
				}
				t.Errorf("%s's stream from %d, before its pods changed beyond the cache = %v; want ErrCompacted (list again)", node, quiet, err)
			}
		}
		// An unindexed pods watch from quiet replays what changed.
		reads := s.Stats().ReplayReads
		all, err := s.Watch(ctx, "pods", storage.WatchOptions{Revision: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer all.Stop()
		if evs := pull(all, 32, waitEvent); len(evs) != 32 || evs[0].Revision != quiet+1 {
			t.Errorf("pods watch from %d = %d events from %v; want 32 from %d", quiet, len(evs), summarize(evs[:min(len(evs), 1)]), quiet+1)
		}
		if s.Stats().ReplayReads == reads {
			t.Error("the pods watch from before the reopen got its history without reading the change log")
		}

		// The resumed watches get what changes next.
		create("late", "n1")
		if err := s.Create(ctx, storagetest.ConfigMap("default", "cm2", nil)); err != nil {
			t.Fatal(err)
		}
		for name, w := range map[string]*storage.Watcher{"n1": w1, "configmaps": wcm} {
			if evs := pull(w, 1, waitEvent); len(evs) != 1 || evs[0].Type != storage.Added {
				t.Errorf("%s's resumed watch after a create = %v; want one ADDED", name, summarize(evs))
			}
		}
		if r := s.ResourceRevision("configmaps"); r != s.Revision() {
			t.Errorf("ResourceRevision(configmaps) = %d; want %d", r, s.Revision())
		}
	})
}
