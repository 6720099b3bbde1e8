package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// pull takes n events from w with Next, waiting on Ready between them, as
// the API server's watch streams do; it stops early if the watch ends or
// timeout passes.
func pull(w *storage.Watcher, n int, timeout time.Duration) []storage.Event {
	evs := make([]storage.Event, 0, n)
	deadline := time.After(timeout)
	for len(evs) < n {
		if ev, ok := w.Next(); ok {
			evs = append(evs, ev)
			continue
		}
		select {
		case <-w.Ready():
		case <-w.Done():
			if ev, ok := w.Next(); ok {
				evs = append(evs, ev)
				continue
			}
			return evs
		case <-deadline:
			return evs
		}
	}
	return evs
}

// seen is an event as a comparison sees it.
type seen struct {
	typ   storage.EventType
	rev   int64
	value string
}

func summarize(evs []storage.Event) []seen {
	out := make([]seen, len(evs))
	for i, ev := range evs {
		out[i] = seen{ev.Type, ev.Revision, string(ev.Value)}
	}
	return out
}

func sameEvents(t *testing.T, what string, got, want []seen) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events; want %d\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: event %d = %v@%d; want %v@%d (or the value differs)", what, i, got[i].typ, got[i].rev, want[i].typ, want[i].rev)
		}
	}
}

// churnPods writes a history in which pods come to node n1, move away,
// change and go: every selector transition happens.
func churnPods(t *testing.T, s *storage.Store, prefix string, rounds int) {
	t.Helper()
	ctx := context.Background()
	for r := range rounds {
		name := fmt.Sprintf("%s%d", prefix, r)
		p := storagetest.Pod("default", name, nil)
		p.Spec.NodeName = []string{"n1", "n2"}[r%2]
		if err := s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, storagetest.Node(name, nil)); err != nil {
			t.Fatal(err) // another resource in between
		}
		if _, err := s.GuaranteedUpdate(ctx, "pods", "default", name, func(o api.Object) (api.Object, error) {
			p := o.(*api.Pod)
			p.Spec.NodeName = map[string]string{"n1": "n2", "n2": "n1"}[p.Spec.NodeName]
			p.Labels = map[string]string{"round": fmt.Sprint(r)}
			return p, nil
		}); err != nil {
			t.Fatal(err)
		}
		if r%3 == 0 {
			if _, err := s.Delete(ctx, "pods", "default", name, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestWatchResumedAfterReopen: a watch resumed from an old revision after
// the store reopens gets exactly the changes the same watch got before,
// selectors applied; resumed from within the watch cache (warmed at Open)
// 50 of them read nothing from the change log, and resumed from before it
// they still get exactly the changes.
func TestWatchResumedAfterReopen(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		for _, tc := range []struct {
			name      string
			cache     int
			wantReads bool
		}{
			{"from the warmed cache", 0, false},
			{"from the change log", 8, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				testWatchResumedAfterReopen(t, b, tc.cache, tc.wantReads)
			})
		}
	})
}

func testWatchResumedAfterReopen(t *testing.T, b storagetest.Backend, cache int, wantReads bool) {
	ctx := context.Background()
	opts := b.Fresh(t, storage.Options{WatchCacheSize: cache, CompactInterval: -1})
	s, err := storage.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	churnPods(t, s, "a", 4)
	from := s.Revision()
	churnPods(t, s, "b", 12)
	// churnPods puts every pod on n1 or n2: "!= n2" selects as "= n1"
	// does, but is not an indexed selector, which lists again rather
	// than replaying (TestIndexedWatchBeyondCacheListsAgain).
	onN1, err := fields.Parse("spec.nodeName!=n2")
	if err != nil {
		t.Fatal(err)
	}
	wopts := storage.WatchOptions{Revision: from, Fields: onN1}
	// What the watch delivers on the store that wrote the history.
	ref, err := s.Watch(ctx, "pods", wopts)
	if err != nil {
		t.Fatal(err)
	}
	want := summarize(drain(ref, 1000, 200*time.Millisecond))
	ref.Stop()
	if len(want) < 12 {
		t.Fatalf("reference watch got %d events; the history should give at least 12", len(want))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = storage.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reads := s.Stats().ReplayReads
	const watchers = 50
	ws := make([]*storage.Watcher, watchers)
	for i := range ws {
		if ws[i], err = s.Watch(ctx, "pods", wopts); err != nil {
			t.Fatal(err)
		}
		defer ws[i].Stop()
	}
	var wg sync.WaitGroup
	got := make([][]seen, watchers)
	for i, w := range ws {
		wg.Go(func() { got[i] = summarize(pull(w, len(want), waitEvent)) })
	}
	wg.Wait()
	for i := range got {
		sameEvents(t, fmt.Sprintf("watcher %d resumed after reopen", i), got[i], want)
	}
	n := s.Stats().ReplayReads - reads
	switch {
	case !wantReads && n != 0:
		t.Errorf("%d watchers resumed within the warmed cache read the change log %d times; want 0", watchers, n)
	case wantReads && n == 0:
		t.Errorf("watchers resumed from before an 8-change cache read nothing from the change log")
	}
	// A live change follows the history.
	p := storagetest.Pod("default", "live", nil)
	p.Spec.NodeName = "n1"
	if err := s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if evs := pull(ws[0], 1, waitEvent); len(evs) != 1 || evs[0].Type != storage.Added || evs[0].Revision != s.Revision() {
		t.Fatalf("live event after the replay = %v; want ADDED@%d", summarize(evs), s.Revision())
	}
}

// TestWatchNextMatchesEvents: a pulled watch and one read from Events,
// started alike, deliver the same sequence, history (change log and
// cache) and live changes written concurrently.
func TestWatchNextMatchesEvents(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{WatchCacheSize: 16})
		churnPods(t, s, "old", 10)
		// churnPods puts every pod on n1 or n2: "!= n2" selects as "= n1"
		// does, but is not an indexed selector, which lists again rather
		// than replaying (TestIndexedWatchBeyondCacheListsAgain).
		onN1, err := fields.Parse("spec.nodeName!=n2")
		if err != nil {
			t.Fatal(err)
		}
		wopts := storage.WatchOptions{Revision: 3, Fields: onN1}
		pw, err := s.Watch(ctx, "pods", wopts)
		if err != nil {
			t.Fatal(err)
		}
		defer pw.Stop()
		ew, err := s.Watch(ctx, "pods", wopts)
		if err != nil {
			t.Fatal(err)
		}
		defer ew.Stop()
		churnPods(t, s, "new", 10) // live changes, while both are open
		want := summarize(drain(ew, 1000, 300*time.Millisecond))
		if len(want) < 20 {
			t.Fatalf("Events gave %d events; want at least 20", len(want))
		}
		got := summarize(pull(pw, len(want), waitEvent))
		sameEvents(t, "Next against Events", got, want)
		if ev, ok := pw.Next(); ok {
			t.Fatalf("Next gave %v@%d beyond what Events gave", ev.Type, ev.Revision)
		}
		// Progress, once everything is handed out, is the store's
		// revision even though the last change was not a selected pod.
		if got := pw.Progress(); got != s.Revision() {
			t.Errorf("Progress() = %d; want the revision %d", got, s.Revision())
		}
		if err := s.Create(ctx, func() *api.Pod { p := storagetest.Pod("default", "z", nil); p.Spec.NodeName = "n1"; return p }()); err != nil {
			t.Fatal(err)
		}
		if got := pw.Progress(); got != 0 {
			t.Errorf("Progress() with an event pending = %d; want 0", got)
		}
	})
}

// TestWatchPullCostsNoGoroutine: pulled watches start no goroutine; one
// whose context ends is forgotten at the next change even without Stop;
// Events after Stop is a closed channel.
func TestWatchPullCostsNoGoroutine(t *testing.T) {
	ctx := context.Background()
	s := storagetest.Open(t, storage.Options{})
	before := runtime.NumGoroutine()
	const n = 100
	ws := make([]*storage.Watcher, n)
	cctx, cancel := context.WithCancel(ctx)
	for i := range ws {
		var err error
		if ws[i], err = s.Watch(cctx, "pods", storage.WatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if d := runtime.NumGoroutine() - before; d > 2 {
		t.Errorf("%d pulled watches started %d goroutines; want none", n, d)
	}
	if got := s.Stats().Watchers; got != n {
		t.Fatalf("Stats().Watchers = %d; want %d", got, n)
	}
	cancel()
	if err := s.Create(ctx, storagetest.Pod("default", "p", nil)); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Watchers; got != 0 {
		t.Errorf("Stats().Watchers after their context ended and a change = %d; want 0", got)
	}
	for _, w := range ws {
		if ev, ok := w.Next(); ok {
			t.Fatalf("Next after the context ended = %v@%d; want nothing", ev.Type, ev.Revision)
		}
		if err := w.Err(); err != nil {
			t.Errorf("Err() after the context ended = %v; want nil", err)
		}
		w.Stop()
		if _, ok := <-w.Events(); ok {
			t.Fatal("Events after Stop delivered an event")
		}
	}
}

// TestWatchPullEndsWithStoreError: a pulled watch learns through Done
// and Err that the store closed.
func TestWatchPullEndsWithStoreError(t *testing.T) {
	ctx := context.Background()
	s := storagetest.Open(t, storage.Options{})
	w, err := s.Watch(ctx, "pods", storage.WatchOptions{FromNow: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Done():
	case <-time.After(waitEvent):
		t.Fatal("Done not closed after Close")
	}
	if _, ok := w.Next(); ok || !errors.Is(w.Err(), storage.ErrClosed) {
		t.Errorf("after Close: Next ok=%v, Err()=%v; want false, ErrClosed", ok, w.Err())
	}
}

// xorSealer "encrypts" by flipping bits: enough to tell sealed from plain.
type xorSealer struct{}

func (xorSealer) Seal(plain, _ []byte) ([]byte, error) { return flip(plain), nil }
func (xorSealer) Unseal(stored, _ []byte) ([]byte, error) {
	return flip(stored), nil
}
func (xorSealer) Current([]byte) bool { return true }

func flip(b []byte) []byte {
	out := bytes.Clone(b)
	for i := range out {
		out[i] ^= 0x5a
	}
	return out
}

// TestWatchCacheWarmedUnsealed: the watch cache warmed at Open holds the
// plain values of sealed resources, as one filled by writes does.
func TestWatchCacheWarmedUnsealed(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		opts := b.Fresh(t, storage.Options{Sealer: xorSealer{}, SealedResources: []string{"configmaps"}})
		s, err := storage.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, storagetest.ConfigMap("default", "secret", map[string]string{"k": "plain-value"})); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err = storage.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: 0})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		evs := pull(w, 1, waitEvent)
		if len(evs) != 1 || !bytes.Contains(evs[0].Value, []byte("plain-value")) {
			t.Fatalf("resumed events = %v; want one with the plain value", summarize(evs))
		}
		if n := s.Stats().ReplayReads; n != 0 {
			t.Errorf("ReplayReads = %d; want 0 (from the warmed cache)", n)
		}
	})
}

// TestPostgresOtherServersSealedChangesUnsealed: a watcher on one server
// gets the plain value of a sealed object another server wrote (the
// follower reads it from the change log, sealed).
func TestPostgresOtherServersSealedChangesUnsealed(t *testing.T) {
	ctx := context.Background()
	opts := storagetest.Backend{Name: "postgres"}.Fresh(t, storage.Options{Sealer: xorSealer{}, SealedResources: []string{"configmaps"}})
	a := storagetest.OpenAt(t, opts)
	b := storagetest.OpenAt(t, opts)
	w, err := b.Watch(ctx, "configmaps", storage.WatchOptions{FromNow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := a.Create(ctx, storagetest.ConfigMap("default", "secret", map[string]string{"k": "plain-value"})); err != nil {
		t.Fatal(err)
	}
	evs := pull(w, 1, waitEvent)
	if len(evs) != 1 || !bytes.Contains(evs[0].Value, []byte("plain-value")) {
		t.Fatalf("event from the other server = %v; want one with the plain value", summarize(evs))
	}
}

// TestIndexedWatchBeyondCacheListsAgain: an indexed watch (an agent's
// spec.nodeName=<node> stream) resumed from a revision the in-memory
// cache no longer holds fails with ErrCompacted (the API answers 410, the
// agent lists again through the node index) instead of reading every
// change since from the change log; from within the cache it resumes,
// and without a cache it replays as any watch does.
func TestIndexedWatchBeyondCacheListsAgain(t *testing.T) {
	ctx := context.Background()
	onN1, err := fields.Parse("spec.nodeName=n1")
	if err != nil {
		t.Fatal(err)
	}
	s := storagetest.Open(t, storage.Options{WatchCacheSize: 16})
	churnPods(t, s, "a", 10) // 10 rounds write more than 16 changes
	old := storage.WatchOptions{Revision: 3, Fields: onN1}
	reads := s.Stats().ReplayReads
	if w, err := s.Watch(ctx, "pods", old); !errors.Is(err, storage.ErrCompacted) {
		if w != nil {
			w.Stop()
		}
		t.Fatalf("indexed watch from revision 3 with a 16-change cache = %v; want ErrCompacted", err)
	}
	if n := s.Stats().ReplayReads - reads; n != 0 {
		t.Errorf("the refused watch read the change log %d times; want 0", n)
	}
	// An unindexed watch from the same revision still replays.
	notN2, err := fields.Parse("spec.nodeName!=n2")
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "pods", storage.WatchOptions{Revision: 3, Fields: notN2})
	if err != nil {
		t.Fatalf("unindexed watch from revision 3 = %v; want it to replay", err)
	}
	if evs := pull(w, 1, waitEvent); len(evs) != 1 {
		t.Errorf("unindexed watch from revision 3 gave %d events; want its replay", len(evs))
	}
	w.Stop()
	// From within the cache the indexed watch resumes, and gets the next
	// change for its node.
	w, err = s.Watch(ctx, "pods", storage.WatchOptions{Revision: s.Revision() - 2, Fields: onN1})
	if err != nil {
		t.Fatalf("indexed watch from within the cache = %v", err)
	}
	defer w.Stop()
	p := storagetest.Pod("default", "live", nil)
	p.Spec.NodeName = "n1"
	if err := s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	evs := drain(w, 1000, 200*time.Millisecond)
	if len(evs) == 0 || evs[len(evs)-1].Type != storage.Added || evs[len(evs)-1].Revision != s.Revision() {
		t.Fatalf("indexed watch from within the cache = %v; want its history, then ADDED@%d", summarize(evs), s.Revision())
	}

	// Without a cache there is nothing to resume from but the change log.
	s0 := storagetest.Open(t, storage.Options{WatchCacheSize: -1})
	churnPods(t, s0, "a", 4)
	w0, err := s0.Watch(ctx, "pods", old)
	if err != nil {
		t.Fatalf("indexed watch with no cache = %v; want it to replay", err)
	}
	defer w0.Stop()
	if evs := pull(w0, 1, waitEvent); len(evs) != 1 {
		t.Errorf("indexed watch with no cache gave %d events; want its replay", len(evs))
	}
}

// TestWatchOfAnUnchangedResourceReadsNoLog: a watch resumed from a
// revision older than the watch cache reads nothing from the change log
// when no object of its resource changed since (a fleet's Service
// watches resuming while a Deployment turns the cache over), and still
// gets every change since when one did, before and after the store
// reopens (the change log's recent history is read at Open).
func TestWatchOfAnUnchangedResourceReadsNoLog(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		opts := b.Fresh(t, storage.Options{WatchCacheSize: 16, CompactInterval: -1})
		s, err := storage.Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { s.Close() }()
		if err := s.Create(ctx, storagetest.ConfigMap("default", "early", nil)); err != nil {
			t.Fatal(err)
		}
		beforeLate := s.Revision()
		if err := s.Create(ctx, storagetest.ConfigMap("default", "late", nil)); err != nil {
			t.Fatal(err)
		}
		unchanged := s.Revision()
		churnPods(t, s, "p", 10) // well over 16 changes: both revisions leave the cache

		// quiet watches from rev, where no configmap changed since: it
		// reads nothing from the change log and has no event to give.
		quiet := func(rev int64) *storage.Watcher {
			t.Helper()
			reads := s.Stats().ReplayReads
			w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: rev})
			if err != nil {
				t.Fatalf("watch configmaps from %d: %v", rev, err)
			}
			t.Cleanup(w.Stop)
			if ev, ok := w.Next(); ok {
				t.Errorf("watch from %d gave %v@%d; want nothing (no configmap changed since)", rev, ev.Type, ev.Revision)
			}
			if n := s.Stats().ReplayReads - reads; n != 0 {
				t.Errorf("watch from %d read the change log %d times; want 0 (no configmap changed since)", rev, n)
			}
			return w
		}
		w := quiet(unchanged)
		if err := s.Create(ctx, storagetest.ConfigMap("default", "live", nil)); err != nil {
			t.Fatal(err)
		}
		if evs := pull(w, 1, waitEvent); len(evs) != 1 || evs[0].Type != storage.Added || evs[0].Revision != s.Revision() {
			t.Fatalf("live event = %v; want ADDED@%d", summarize(evs), s.Revision())
		}
		live := s.Revision()
		// "late" changed after beforeLate: the change log is read for it.
		reads := s.Stats().ReplayReads
		w2, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: beforeLate})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Stop()
		if evs := pull(w2, 2, waitEvent); len(evs) != 2 || evs[0].Revision != unchanged || evs[1].Revision != s.Revision() {
			t.Fatalf("watch from %d = %v; want late's ADDED@%d, then live's", beforeLate, summarize(evs), unchanged)
		}
		if s.Stats().ReplayReads == reads {
			t.Errorf("watch from %d got late's creation without reading the change log", beforeLate)
		}

		// Reopened, the store still knows "late" changed after
		// beforeLate: a watch from there replays it, though no configmap
		// changed since Open.
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = storage.Open(ctx, opts); err != nil {
			t.Fatal(err)
		}
		afterOpen := s.Revision()
		churnPods(t, s, "q", 10)
		w3, err := s.Watch(ctx, "configmaps", storage.WatchOptions{Revision: beforeLate})
		if err != nil {
			t.Fatal(err)
		}
		defer w3.Stop()
		if evs := pull(w3, 2, waitEvent); len(evs) != 2 || evs[0].Revision != unchanged {
			t.Fatalf("after reopen, watch from %d = %v; want late's ADDED@%d, then live's", beforeLate, summarize(evs), unchanged)
		}
		// From after Open, or from "live" before it, with no configmap
		// changed since: no read.
		quiet(afterOpen)
		quiet(live)
	})
}

// TestIndexedWatchOfAQuietNodeResumes: an indexed watch (an agent's
// assignment stream, rotated every few minutes) resumed from a revision
// the cache no longer holds resumes, reading nothing, when no pod of its
// node changed since; a pod that moved away from the node since is a
// change, and that watch is told to list again.
func TestIndexedWatchOfAQuietNodeResumes(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{WatchCacheSize: 16})
		on := func(node string) storage.WatchOptions {
			fs, err := fields.Parse("spec.nodeName=" + node)
			if err != nil {
				t.Fatal(err)
			}
			return storage.WatchOptions{Fields: fs}
		}
		p := storagetest.Pod("default", "mover", nil)
		p.Spec.NodeName = "n1"
		if err := s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		// The agent of n3 watches, as every agent does from its start.
		opts := on("n3")
		opts.Revision = s.Revision()
		w, err := s.Watch(ctx, "pods", opts)
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
		quietFrom := s.Revision()
		for i := range 20 { // well past the 16-change cache, none on n3
			q := storagetest.Pod("default", fmt.Sprintf("busy%d", i), nil)
			q.Spec.NodeName = "n2"
			if err := s.Create(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		reads := s.Stats().ReplayReads
		opts.Revision = quietFrom
		w, err = s.Watch(ctx, "pods", opts)
		if err != nil {
			t.Fatalf("watch of quiet n3 from %d (beyond the cache) = %v; want it resumed", quietFrom, err)
		}
		defer w.Stop()
		if ev, ok := w.Next(); ok {
			t.Fatalf("resumed watch of n3 gave %v@%d; want nothing until n3 changes", ev.Type, ev.Revision)
		}
		if n := s.Stats().ReplayReads - reads; n != 0 {
			t.Errorf("resumed watch of n3 read the change log %d times; want 0", n)
		}
		// The mover leaves n1 for n3: both nodes' watches are offered it.
		moved := s.Revision()
		if _, err := s.GuaranteedUpdate(ctx, "pods", "default", "mover", func(o api.Object) (api.Object, error) {
			p := o.(*api.Pod)
			p.Spec.NodeName = "n3"
			return p, nil
		}); err != nil {
			t.Fatal(err)
		}
		if evs := pull(w, 1, waitEvent); len(evs) != 1 || evs[0].Type != storage.Added || evs[0].Revision != s.Revision() {
			t.Fatalf("n3's watch after the move = %v; want ADDED@%d", summarize(evs), s.Revision())
		}
		for i := range 20 {
			q := storagetest.Pod("default", fmt.Sprintf("more%d", i), nil)
			q.Spec.NodeName = "n2"
			if err := s.Create(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		// The mover left n1 after moved: a watch of n1 from there lists
		// again, one from after the move resumes.
		opts = on("n1")
		opts.Revision = moved
		if w, err := s.Watch(ctx, "pods", opts); !errors.Is(err, storage.ErrCompacted) {
			if w != nil {
				w.Stop()
			}
			t.Fatalf("watch of n1 from %d, before the mover left it = %v; want ErrCompacted", moved, err)
		}
		opts.Revision = moved + 1
		w1, err := s.Watch(ctx, "pods", opts)
		if err != nil {
			t.Fatalf("watch of n1 from after the move = %v; want it resumed", err)
		}
		w1.Stop()
	})
}
