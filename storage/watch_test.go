package storage_test

import (
	"bytes"
	"context"
	"errors"
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

const waitEvent = 10 * time.Second

// drain reads up to n events from w within timeout, in a goroutine of
// its own; it stops early if the watch ends.
func drain(w *storage.Watcher, n int, timeout time.Duration) []storage.Event {
	evs := make([]storage.Event, 0, n)
	deadline := time.After(timeout)
	for len(evs) < n {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-deadline:
			return evs
		}
	}
	return evs
}

// applyEvents replays events onto a map key -> value, as a client cache.
func applyEvents(t *testing.T, state map[string][]byte, evs []storage.Event) {
	t.Helper()
	for _, ev := range evs {
		obj, err := ev.Object()
		if err != nil {
			t.Errorf("Event.Object() = %v; want nil", err)
			continue
		}
		m := obj.GetObjectMeta()
		k := m.Namespace + "/" + m.Name
		if ns, name := ev.Key(); ns != m.Namespace || name != m.Name {
			t.Errorf("Event.Key() = %q, %q; want the object's %q, %q", ns, name, m.Namespace, m.Name)
		}
		switch ev.Type {
		case storage.Added, storage.Modified:
			state[k] = ev.Value
		case storage.Deleted:
			delete(state, k)
		}
	}
}

func TestWatchOrderConcurrentWriters(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			opts storage.Options
		}{
			{"ring", storage.Options{}},
			{"no ring", storage.Options{WatchCacheSize: -1}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := b.Open(t, tc.opts)
				// Start the history at 1 so replays from start skip n0.
				if err := s.Create(ctx, storagetest.Node("n0", nil)); err != nil {
					t.Fatal(err)
				}
				start := s.Revision()
				w, err := s.Watch(ctx, "pods", storage.WatchOptions{FromNow: true})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()

				const writers, perWriter = 64, 8
				podWrites := writers * perWriter * 5 / 2 // create + update + half deleted
				collected := make(chan []storage.Event, 1)
				go func() { collected <- drain(w, podWrites, 30*time.Second) }()
				var wg sync.WaitGroup
				for g := range writers {
					wg.Go(func() {
						for i := range perWriter {
							name := fmt.Sprintf("p-%d-%d", g, i)
							pod := storagetest.Pod("default", name, map[string]string{"g": fmt.Sprint(g)})
							if err := s.Create(ctx, pod); err != nil {
								t.Errorf("Create(%s) = %v", name, err)
								return
							}
							pod.Status.Phase = api.PodRunning
							if err := s.Update(ctx, pod); err != nil {
								t.Errorf("Update(%s) = %v", name, err)
								return
							}
							if i%2 == 0 {
								if _, err := s.Delete(ctx, "pods", "default", name, ""); err != nil {
									t.Errorf("Delete(%s) = %v", name, err)
								}
							}
							// Noise in another resource must not reach the pod watcher.
							if err := s.Create(ctx, storagetest.ConfigMap("default", name, nil)); err != nil {
								t.Errorf("Create(cm %s) = %v", name, err)
							}
						}
					})
				}
				wg.Wait()
				if t.Failed() {
					return
				}
				end := s.Revision()
				if end-start != int64(podWrites+writers*perWriter) {
					t.Fatalf("revisions used = %d; want %d", end-start, podWrites+writers*perWriter)
				}
				live := <-collected
				if len(live) != podWrites {
					t.Fatalf("live watcher got %d events (Err() = %v); want %d", len(live), w.Err(), podWrites)
				}
				storagetest.Quiet(t, w, 50*time.Millisecond)
				for i := 1; i < len(live); i++ {
					if live[i].Revision <= live[i-1].Revision {
						t.Fatalf("event %d revision %d after %d; want strictly increasing", i, live[i].Revision, live[i-1].Revision)
					}
				}

				// The same history replayed after the fact (ring or change log)
				// must be identical: no gaps relative to the log.
				r, err := s.Watch(ctx, "pods", storage.WatchOptions{Revision: start})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Stop()
				replayed := storagetest.Collect(t, r, podWrites, waitEvent)
				for i := range live {
					if live[i].Revision != replayed[i].Revision || live[i].Type != replayed[i].Type || !bytes.Equal(live[i].Value, replayed[i].Value) {
						t.Fatalf("event %d: live %v@%d, replayed %v@%d; want equal", i, live[i].Type, live[i].Revision, replayed[i].Type, replayed[i].Revision)
					}
				}

				state := map[string][]byte{}
				applyEvents(t, state, live)
				raw, listRev, err := s.ListRaw(ctx, "pods", storage.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if listRev != end || len(raw) != len(state) {
					t.Fatalf("ListRaw = %d items at %d; want %d items at %d", len(raw), listRev, len(state), end)
				}
				for _, v := range raw {
					obj, _ := api.DecodeObject(v)
					m := obj.GetObjectMeta()
					if !bytes.Equal(state[m.Namespace+"/"+m.Name], v) {
						t.Errorf("watch state of %s differs from the list", m.Name)
					}
				}
			})
		}
	})
}

func TestWatchResume(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			opts storage.Options
		}{
			{"from ring", storage.Options{}},
			{"from change log", storage.Options{WatchCacheSize: -1}},
			{"log then ring", storage.Options{WatchCacheSize: 10}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := b.Open(t, tc.opts)
				for i := range 100 {
					if err := s.Create(ctx, storagetest.ConfigMap("default", fmt.Sprint("c", i), nil)); err != nil {
						t.Fatal(err)
					}
				}
				w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: 50})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				evs := storagetest.Collect(t, w, 50, waitEvent)
				for i, ev := range evs {
					if want := int64(51 + i); ev.Revision != want || ev.Type != storage.Added {
						t.Fatalf("event %d = %v@%d; want ADDED@%d", i, ev.Type, ev.Revision, want)
					}
				}
				if _, err := s.Delete(ctx, "configmaps", "default", "c0", ""); err != nil {
					t.Fatal(err)
				}
				if ev := storagetest.Next(t, w, waitEvent); ev.Revision != 101 || ev.Type != storage.Deleted {
					t.Fatalf("live event = %v@%d; want DELETED@101", ev.Type, ev.Revision)
				}
				storagetest.Quiet(t, w, 20*time.Millisecond)

				// A revision beyond the current one delivers only what follows it.
				f, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: 102})
				if err != nil {
					t.Fatal(err)
				}
				defer f.Stop()
				for i := range 2 {
					if err := s.Create(ctx, storagetest.ConfigMap("default", fmt.Sprint("new", i), nil)); err != nil {
						t.Fatal(err)
					}
				}
				if ev := storagetest.Next(t, f, waitEvent); ev.Revision != 103 {
					t.Fatalf("Watch(from 102) first event at %d; want 103", ev.Revision)
				}
			})
		}
	})
}

func TestWatchResumeAcrossReopen(t *testing.T) {
	storagetest.ForEachBackend(t, testWatchResumeAcrossReopen)
}

func testWatchResumeAcrossReopen(t *testing.T, b storagetest.Backend) {
	ctx := context.Background()
	opts := b.Fresh(t, storage.Options{})
	s, err := storage.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := s.Create(ctx, storagetest.Node(fmt.Sprint("n", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = storage.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Revision(); got != 20 {
		t.Fatalf("Revision() after reopen = %d; want 20", got)
	}
	w, err := s.Watch(ctx, "nodes", storage.WatchOptions{Revision: 15})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := s.Create(ctx, storagetest.Node("late", nil)); err != nil {
		t.Fatal(err)
	}
	evs := storagetest.Collect(t, w, 6, waitEvent)
	for i, ev := range evs {
		if want := int64(16 + i); ev.Revision != want {
			t.Fatalf("event %d at revision %d; want %d", i, ev.Revision, want)
		}
	}
}

// step is one write in a selector scenario.
type step struct {
	labels map[string]string
	node   string
	phase  api.PodPhase
	delete bool
}

func TestWatchSelectorTransitions(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		web, err := labels.Parse("app=web")
		if err != nil {
			t.Fatal(err)
		}
		onN1, err := fields.Parse("spec.nodeName=n1")
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name  string
			opts  storage.WatchOptions
			steps []step
			want  []storage.EventType // one per step; 0 = no event
		}{
			{
				name: "label in and out",
				opts: storage.WatchOptions{Labels: web},
				steps: []step{
					{labels: map[string]string{"app": "db"}},
					{labels: map[string]string{"app": "web"}},
					{labels: map[string]string{"app": "web"}, phase: api.PodRunning},
					{labels: map[string]string{"app": "db"}, phase: api.PodRunning},
					{delete: true},
				},
				want: []storage.EventType{0, storage.Added, storage.Modified, storage.Deleted, 0},
			},
			{
				name: "label from none",
				opts: storage.WatchOptions{Labels: web},
				steps: []step{
					{},
					{labels: map[string]string{"app": "web"}},
					{},
				},
				want: []storage.EventType{0, storage.Added, storage.Deleted},
			},
			{
				name: "bound to node",
				opts: storage.WatchOptions{Fields: onN1},
				steps: []step{
					{},
					{node: "n1"},
					{node: "n1", phase: api.PodRunning},
					{delete: true},
				},
				want: []storage.EventType{0, storage.Added, storage.Modified, storage.Deleted},
			},
			{
				name: "other node",
				opts: storage.WatchOptions{Fields: onN1},
				steps: []step{
					{},
					{node: "n2"},
					{delete: true},
				},
				want: []storage.EventType{0, 0, 0},
			},
			{
				name: "namespace",
				opts: storage.WatchOptions{Namespace: "other"},
				steps: []step{
					{},
					{delete: true},
				},
				want: []storage.EventType{0, 0},
			},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				s := b.Open(t, storage.Options{})
				// Start the history at 1 so replays from start skip n0.
				if err := s.Create(ctx, storagetest.Node("n0", nil)); err != nil {
					t.Fatal(err)
				}
				start := s.Revision()
				lopts := tt.opts
				lopts.FromNow = true
				live, err := s.Watch(ctx, "pods", lopts)
				if err != nil {
					t.Fatal(err)
				}
				defer live.Stop()
				var want []storage.Event
				for i, st := range tt.steps {
					if st.delete {
						if _, err := s.Delete(ctx, "pods", "default", "p", ""); err != nil {
							t.Fatal(err)
						}
					} else {
						p := storagetest.Pod("default", "p", st.labels)
						p.Spec.NodeName = st.node
						if st.phase != "" {
							p.Status.Phase = st.phase
						}
						var err error
						if i == 0 {
							err = s.Create(ctx, p)
						} else {
							err = s.Update(ctx, p)
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					if tt.want[i] != 0 {
						want = append(want, storage.Event{Type: tt.want[i], Revision: s.Revision()})
					}
				}
				// Replaying the history must look the same as living it.
				ropts := tt.opts
				ropts.Revision = start
				replay, err := s.Watch(ctx, "pods", ropts)
				if err != nil {
					t.Fatal(err)
				}
				defer replay.Stop()
				for _, mode := range []struct {
					name string
					w    *storage.Watcher
				}{
					{"live", live},
					{"replayed", replay},
				} {
					got := storagetest.Collect(t, mode.w, len(want), waitEvent)
					storagetest.Quiet(t, mode.w, 20*time.Millisecond)
					for i := range want {
						if got[i].Type != want[i].Type || got[i].Revision != want[i].Revision {
							t.Errorf("%s event %d = %v@%d; want %v@%d", mode.name, i, got[i].Type, got[i].Revision, want[i].Type, want[i].Revision)
						}
					}
				}
			})
		}
	})
}

func TestWatchCompacted(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{CompactMinRevisions: 10, CompactMinAge: time.Nanosecond, CompactInterval: -1})
		for i := range 100 {
			if err := s.Create(ctx, storagetest.Node(fmt.Sprint("n", i), nil)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Compact(ctx)
		if err != nil || got != 90 {
			t.Fatalf("Compact() = %d, %v; want 90, nil", got, err)
		}
		tests := []struct {
			from int64
			want error
		}{
			{1, storage.ErrCompacted},
			{89, storage.ErrCompacted},
			{90, nil},
			{95, nil},
		}
		for _, tt := range tests {
			w, err := s.Watch(ctx, "nodes", storage.WatchOptions{Revision: tt.from})
			if !errors.Is(err, tt.want) {
				t.Errorf("Watch(from %d) = %v; want %v", tt.from, err, tt.want)
			}
			if err == nil {
				if ev := storagetest.Next(t, w, waitEvent); ev.Revision != tt.from+1 {
					t.Errorf("Watch(from %d) first event at %d; want %d", tt.from, ev.Revision, tt.from+1)
				}
				w.Stop()
			}
		}
	})
}

func TestWatchTooSlow(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{WatchBuffer: 16})
		slow, err := s.Watch(ctx, "configmaps", storage.WatchOptions{FromNow: true})
		if err != nil {
			t.Fatal(err)
		}
		defer slow.Stop()
		// The slow watcher never reads. The writers must still finish: the
		// writer never waits for a watcher.
		const writers, perWriter = 8, 40
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for g := range writers {
			wg.Go(func() {
				for i := range perWriter {
					if err := s.Create(wctx, storagetest.ConfigMap("default", fmt.Sprint(g, "-", i), nil)); err != nil {
						t.Errorf("Create = %v; writers must not block on a slow watcher", err)
						return
					}
				}
			})
		}
		wg.Wait()
		if got := s.Revision(); got != writers*perWriter {
			t.Fatalf("Revision() = %d; want %d", got, writers*perWriter)
		}
		deadline := time.After(waitEvent)
		for {
			select {
			case _, ok := <-slow.Events():
				if ok {
					continue // at most the one event the goroutine held
				}
				if err := slow.Err(); !errors.Is(err, storage.ErrTooSlow) {
					t.Fatalf("slow watcher Err() = %v; want ErrTooSlow", err)
				}
				return
			case <-deadline:
				t.Fatal("slow watcher still open")
			}
		}
	})
}

// A watcher's own Buffer overrides Options.WatchBuffer: with a store
// buffer of 4, a watcher that asked for 64 holds 40 undelivered events and
// gets them all, while one on the default is cut off; a negative Buffer
// is refused.
func TestWatchBuffer(t *testing.T) {
	ctx := context.Background()
	s := storagetest.Open(t, storage.Options{WatchBuffer: 4})
	if _, err := s.Watch(ctx, "configmaps", storage.WatchOptions{FromNow: true, Buffer: -1}); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("Watch(Buffer -1) = %v; want ErrInvalid", err)
	}
	big, err := s.Watch(ctx, "configmaps", storage.WatchOptions{FromNow: true, Buffer: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Stop()
	small, err := s.Watch(ctx, "configmaps", storage.WatchOptions{FromNow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Stop()
	const n = 40
	for i := range n {
		if err := s.Create(ctx, storagetest.ConfigMap("default", fmt.Sprint("c", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if ev := storagetest.Next(t, big, waitEvent); ev.Revision != int64(i+1) {
			t.Fatalf("event %d at revision %d; want %d", i, ev.Revision, i+1)
		}
	}
	select {
	case <-small.Done():
		if err := small.Err(); !errors.Is(err, storage.ErrTooSlow) {
			t.Fatalf("the watcher on the store's buffer of 4: %v; want ErrTooSlow", err)
		}
	case <-time.After(waitEvent):
		t.Fatal("the watcher on the store's buffer of 4 is still open 40 events behind")
	}
}

// TestWatchReadyWhenItFails: a reader that waits on Ready alone (the
// shared watch stream waits on its watches' Ready, not on each Done)
// learns that its watch failed.
func TestWatchReadyWhenItFails(t *testing.T) {
	ctx := context.Background()
	s := storagetest.Open(t, storage.Options{})
	w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{FromNow: true, Buffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ready := func(what string) {
		t.Helper()
		select {
		case <-w.Ready():
		case <-time.After(waitEvent):
			t.Fatalf("Ready did not fire %s", what)
		}
	}
	if err := s.Create(ctx, storagetest.ConfigMap("default", "c0", nil)); err != nil {
		t.Fatal(err)
	}
	ready("for the first event")
	// The event is not read: the second one finds the buffer of 1 full.
	if err := s.Create(ctx, storagetest.ConfigMap("default", "c1", nil)); err != nil {
		t.Fatal(err)
	}
	ready("when the watch fell behind and failed")
	select {
	case <-w.Done():
	default:
		t.Fatal("Ready fired but the watch is not done")
	}
	if err := w.Err(); !errors.Is(err, storage.ErrTooSlow) {
		t.Fatalf("Err() = %v; want ErrTooSlow", err)
	}
}

func TestWatchStop(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		w, err := s.Watch(ctx, "pods", storage.WatchOptions{FromNow: true})
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		w.Stop()
		if _, ok := <-w.Events(); ok || w.Err() != nil {
			t.Errorf("after Stop: open=%v Err()=%v; want closed, nil", ok, w.Err())
		}
		cctx, cancel := context.WithCancel(ctx)
		w, err = s.Watch(cctx, "pods", storage.WatchOptions{FromNow: true})
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if _, ok := <-w.Events(); ok || w.Err() != nil {
			t.Errorf("after cancel: open=%v Err()=%v; want closed, nil", ok, w.Err())
		}
		w, err = s.Watch(ctx, "pods", storage.WatchOptions{FromNow: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, ok := <-w.Events(); ok || !errors.Is(w.Err(), storage.ErrClosed) {
			t.Errorf("after Close: open=%v Err()=%v; want closed, ErrClosed", ok, w.Err())
		}
		if _, err := s.Watch(ctx, "pods", storage.WatchOptions{FromNow: true}); !errors.Is(err, storage.ErrClosed) {
			t.Errorf("Watch after Close = %v; want ErrClosed", err)
		}
	})
}
