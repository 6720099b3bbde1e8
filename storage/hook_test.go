package storage_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// recordingHook records what a ChangeHook is told.
type recordingHook struct {
	mu  sync.Mutex
	got []string
}

func (h *recordingHook) Changed(resource, namespace, name string, deleted bool, value []byte, rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, fmt.Sprintf("%s %s/%s deleted=%v rev=%d value=%v", resource, namespace, name, deleted, rev, strings.Contains(string(value), `"name":"`+name+`"`)))
}

func (h *recordingHook) Missed(rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, fmt.Sprintf("missed %d", rev))
}

func (h *recordingHook) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.got
	h.got = nil
	return out
}

// TestChangeHook: a hook hears of each write before the writer is
// answered, in revision order, with the stored value (the last one for a
// deletion).
func TestChangeHook(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		h := &recordingHook{}
		s.AddChangeHook(h)
		if err := s.Create(ctx, storagetest.Node("n1", nil)); err != nil {
			t.Fatal(err)
		}
		if got := h.take(); len(got) != 1 || got[0] != "nodes /n1 deleted=false rev=1 value=true" {
			t.Fatalf("after Create: %q", got)
		}
		if err := s.Create(ctx, storagetest.Pod("default", "web", nil)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, "nodes", "", "n1", ""); err != nil {
			t.Fatal(err)
		}
		got := h.take()
		want := []string{"pods default/web deleted=false rev=2 value=true", "nodes /n1 deleted=true rev=3 value=true"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("after Create(web), Delete(n1): %q; want %q", got, want)
		}
	})
}
