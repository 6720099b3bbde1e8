package storagetest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/storage"
)

// Open opens a Store on a new file in tb.TempDir() (opts.Path, when set,
// is taken relative to that directory) and closes it when the test ends.
func Open(tb testing.TB, opts storage.Options) *storage.Store {
	tb.Helper()
	name := opts.Path
	if name == "" {
		name = "state.db"
	}
	opts.Path = filepath.Join(tb.TempDir(), name)
	s, err := storage.Open(context.Background(), opts)
	if err != nil {
		tb.Fatalf("storage.Open(%q) = %v; want nil", opts.Path, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close() = %v; want nil", err)
		}
	})
	return s
}

// Next returns the next event of w, failing the test if none arrives
// within timeout or the watch ends.
func Next(tb testing.TB, w *storage.Watcher, timeout time.Duration) storage.Event {
	tb.Helper()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			tb.Fatalf("watch ended with %v; want another event", w.Err())
		}
		return ev
	case <-t.C:
		tb.Fatalf("no watch event within %v", timeout)
	}
	return storage.Event{}
}

// Collect reads n events from w, failing the test as Next does.
func Collect(tb testing.TB, w *storage.Watcher, n int, timeout time.Duration) []storage.Event {
	tb.Helper()
	evs := make([]storage.Event, 0, n)
	for range n {
		evs = append(evs, Next(tb, w, timeout))
	}
	return evs
}

// Quiet fails the test if w delivers an event within d.
func Quiet(tb testing.TB, w *storage.Watcher, d time.Duration) {
	tb.Helper()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case ev, ok := <-w.Events():
		if ok {
			tb.Fatalf("unexpected event %v at revision %d", ev.Type, ev.Revision)
		}
	case <-t.C:
	}
}
