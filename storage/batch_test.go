package storage_test

import (
	"context"
	"errors"
	"fmt"
	"runtime/metrics"
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

// TestCreateBatchPerObject: a batch of creates commits once; a name
// already taken (stored before, or earlier in the same batch) fails
// alone with ErrExists; the others get their revisions and are stored.
func TestCreateBatchPerObject(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t, storage.Options{MaxBatch: 2, MaxBatchTxn: 3})
		ctx := context.Background()
		if err := s.Create(ctx, storagetest.Pod("default", "taken", nil)); err != nil {
			t.Fatal(err)
		}
		commits := s.Stats().Commits
		names := []string{"a", "taken", "b", "a", "c"}
		objs := make([]api.Object, len(names))
		for i, n := range names {
			objs[i] = storagetest.Pod("default", n, map[string]string{"i": string(rune('0' + i))})
		}
		errs := s.CreateBatch(ctx, objs)
		for i, err := range errs {
			wantExists := names[i] == "taken" || i == 3
			if wantExists != errors.Is(err, storage.ErrExists) || !wantExists && err != nil {
				t.Errorf("CreateBatch[%d] (%s) = %v; want ErrExists: %v", i, names[i], err, wantExists)
			}
		}
		// Five objects over MaxBatchTxn 3: two transactions (not three,
		// as MaxBatch 2 would make).
		if got := s.Stats().Commits - commits; got != 2 {
			t.Errorf("commits for 5 creates at MaxBatchTxn 3 = %d; want 2", got)
		}
		for i, n := range []string{"a", "b", "c"} {
			o, err := s.Get(ctx, "pods", "default", n)
			if err != nil {
				t.Fatal(err)
			}
			want := objs[[]int{0, 2, 4}[i]]
			if o.GetObjectMeta().ResourceVersion != want.GetObjectMeta().ResourceVersion || o.GetObjectMeta().Labels["i"] != want.GetObjectMeta().Labels["i"] {
				t.Errorf("stored %s = rv %s labels %v; the batch's copy says rv %s labels %v", n,
					o.GetObjectMeta().ResourceVersion, o.GetObjectMeta().Labels, want.GetObjectMeta().ResourceVersion, want.GetObjectMeta().Labels)
			}
		}
		if objs[1].GetObjectMeta().ResourceVersion != "" || objs[3].GetObjectMeta().ResourceVersion != "" {
			t.Errorf("failed creates got revisions %q, %q; want none", objs[1].GetObjectMeta().ResourceVersion, objs[3].GetObjectMeta().ResourceVersion)
		}
		if errs := s.CreateBatch(ctx, []api.Object{&api.Pod{}}); !errors.Is(errs[0], storage.ErrInvalid) {
			t.Errorf("CreateBatch(nameless pod) = %v; want ErrInvalid", errs)
		}
	})
}

// TestWritesStartNoGoroutines: a write transaction on SQLite starts no
// goroutine per statement (the driver starts one to watch any context
// that can end). On a busy server each such goroutine waits for a core
// before it can exit: a batch of 256 pod creates started over 500.
func TestWritesStartNoGoroutines(t *testing.T) {
	s := storagetest.Open(t, storage.Options{CompactInterval: -1, CheckpointInterval: -1})
	ctx := context.Background()
	const n = 256
	objs := make([]api.Object, n)
	for i := range objs {
		objs[i] = storagetest.Pod("default", fmt.Sprintf("p%03d", i), nil)
	}
	before := goroutinesCreated()
	for _, err := range s.CreateBatch(ctx, objs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		o.(*api.Pod).Spec.NodeName = "n1"
	}
	for _, err := range s.UpdateBatch(ctx, objs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	// The store's own background work may start a few; one a write
	// (as before) is 512.
	if got := goroutinesCreated() - before; got > 16 {
		t.Errorf("%d goroutines started for %d writes; want none per write", got, 2*n)
	}
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestPointReadsStartNoGoroutines: a read of one object on SQLite starts
// no goroutine, even under a context that can end (every request's).
func TestPointReadsStartNoGoroutines(t *testing.T) {
	s := storagetest.Open(t, storage.Options{CompactInterval: -1, CheckpointInterval: -1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Create(ctx, storagetest.Pod("default", "p", nil)); err != nil {
		t.Fatal(err)
	}
	const n = 200
	before := goroutinesCreated()
	for range n {
		if _, err := s.Get(ctx, "pods", "default", "p"); err != nil {
			t.Fatal(err)
		}
	}
	if got := goroutinesCreated() - before; got > 16 {
		t.Errorf("%d goroutines started for %d reads; want none per read", got, n)
	}
}
