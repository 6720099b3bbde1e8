package storage_test

import (
	"context"
	"errors"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

func TestUpdateBatchPreconditionsPerObject(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t, storage.Options{})
		ctx := context.Background()
		var pods []*api.Pod
		for _, name := range []string{"a", "b", "c"} {
			p := storagetest.Pod("default", name, nil)
			if err := s.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
			pods = append(pods, p)
		}
		commits := s.Stats().Commits
		pods[0].Spec.NodeName = "n1"
		pods[1].Spec.NodeName = "n1"
		pods[1].ResourceVersion = "1" // stale
		pods[2].Spec.NodeName = "n2"
		errs := s.UpdateBatch(ctx, []api.Object{pods[0], pods[1], pods[2]})
		if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], storage.ErrConflict) {
			t.Fatalf("UpdateBatch = %v; want nil, ErrConflict, nil", errs)
		}
		if got := s.Stats().Commits - commits; got != 1 {
			t.Errorf("commits for one batch = %d; want 1", got)
		}
		for i, want := range []string{"n1", "", "n2"} {
			o, err := s.Get(ctx, "pods", "default", pods[i].Name)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.(*api.Pod).Spec.NodeName; got != want {
				t.Errorf("pod %s nodeName = %q; want %q", pods[i].Name, got, want)
			}
			if i != 1 && o.GetObjectMeta().ResourceVersion != pods[i].ResourceVersion {
				t.Errorf("pod %s resourceVersion = %s; caller's copy says %s", pods[i].Name, o.GetObjectMeta().ResourceVersion, pods[i].ResourceVersion)
			}
		}
		if errs := s.UpdateBatch(ctx, []api.Object{&api.Pod{}}); errs[0] == nil || !errors.Is(errs[0], storage.ErrInvalid) {
			t.Errorf("UpdateBatch(nameless pod) = %v; want ErrInvalid", errs)
		}
	})
}

// TestUpdateBatchSameObjectTwice: within one batch the second write of
// an object sees the first (on PostgreSQL the batch is decided in memory
// from one read, then pipelined).
func TestUpdateBatchSameObjectTwice(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		cm := storagetest.ConfigMap("default", "x", nil)
		if err := s.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		rv := cm.ResourceVersion
		first := storagetest.ConfigMap("default", "x", map[string]string{"n": "1"})
		second := storagetest.ConfigMap("default", "x", map[string]string{"n": "2"})
		first.ResourceVersion, second.ResourceVersion = rv, rv
		errs := s.UpdateBatch(ctx, []api.Object{first, second})
		if errs[0] != nil || !errors.Is(errs[1], storage.ErrConflict) {
			t.Fatalf("UpdateBatch(same precondition twice) = %v; want [nil, ErrConflict]", errs)
		}
		third := storagetest.ConfigMap("default", "x", map[string]string{"n": "3"})
		fourth := storagetest.ConfigMap("default", "x", map[string]string{"n": "4"})
		missing := storagetest.ConfigMap("default", "missing", nil)
		errs = s.UpdateBatch(ctx, []api.Object{third, missing, fourth})
		if errs[0] != nil || !errors.Is(errs[1], storage.ErrNotFound) || errs[2] != nil {
			t.Fatalf("UpdateBatch(unconditional twice, one missing) = %v; want [nil, ErrNotFound, nil]", errs)
		}
		if third.ResourceVersion != "3" || fourth.ResourceVersion != "4" {
			t.Errorf("revisions %s, %s; want 3, 4", third.ResourceVersion, fourth.ResourceVersion)
		}
		got, err := s.Get(ctx, "configmaps", "default", "x")
		if err != nil || got.(*api.ConfigMap).Data["n"] != "4" || got.GetObjectMeta().ResourceVersion != "4" {
			t.Errorf("Get = %v, %v; want data n=4 at 4", got, err)
		}
	})
}
