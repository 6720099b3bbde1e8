package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api/fields"
)

// TestNodeWatchesIndexed: watches selecting one spec.nodeName are kept by
// node, not among the watchers every change is matched against, and a
// write reaches only the matching watcher's queue.
func TestNodeWatchesIndexed(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: t.TempDir() + "/db"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ws []*Watcher
	for i := range 50 {
		fs, err := fields.Parse(fmt.Sprintf("spec.nodeName=n%d", i))
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Watch(ctx, "pods", WatchOptions{FromNow: true, Fields: fs})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	s.bc.mu.Lock()
	plain, indexed, nodes := len(s.bc.watchers["pods"]), s.bc.indexed.n, len(s.bc.indexed.by["pods"])
	s.bc.mu.Unlock()
	if plain != 0 || indexed != 50 || nodes != 50 {
		t.Fatalf("%d plain and %d indexed watchers over %d nodes; want 0, 50, 50", plain, indexed, nodes)
	}
	ws[7].Stop()
	s.bc.mu.Lock()
	indexed, nodes = s.bc.indexed.n, len(s.bc.indexed.by["pods"])
	s.bc.mu.Unlock()
	if indexed != 49 || nodes != 49 {
		t.Fatalf("after Stop: %d indexed watchers over %d nodes; want 49, 49", indexed, nodes)
	}
}
