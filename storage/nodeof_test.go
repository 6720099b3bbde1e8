package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// TestNodeOf reads a pod's node from the store's memory of what it wrote
// last and from the database (on SQLite without that memory, and on
// PostgreSQL), before and after the pod is bound, and for pods that are
// missing or were deleted.
func TestNodeOf(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		for _, hot := range []int{0, -1} {
			ctx := context.Background()
			s := b.Open(t, storage.Options{HotObjects: hot})
			check := func(name, want string, wantErr error) {
				t.Helper()
				got, err := s.NodeOf(ctx, "pods", "default", name)
				if !errors.Is(err, wantErr) || got != want {
					t.Errorf("hot objects %d: NodeOf(%s) = %q, %v; want %q, %v", hot, name, got, err, want, wantErr)
				}
			}
			pod := storagetest.Pod("default", "web", nil)
			if err := s.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			check("web", "", nil)
			pod.Spec.NodeName = "n1"
			if err := s.Update(ctx, pod); err != nil {
				t.Fatal(err)
			}
			check("web", "n1", nil)
			check("nope", "", storage.ErrNotFound)
			if _, err := s.NodeOf(ctx, "pods", "", "web"); !errors.Is(err, storage.ErrInvalid) {
				t.Errorf("NodeOf without a namespace = %v; want ErrInvalid", err)
			}
			if _, err := s.Delete(ctx, "pods", "default", "web", ""); err != nil {
				t.Fatal(err)
			}
			check("web", "", storage.ErrNotFound)
		}
	})
}
