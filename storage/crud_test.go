package storage_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

func TestCRUD(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})

		pod := storagetest.Pod("default", "web", map[string]string{"app": "web"})
		if err := s.Create(ctx, pod); err != nil {
			t.Fatalf("Create(web) = %v; want nil", err)
		}
		if pod.ResourceVersion != "1" || pod.Kind != "Pod" || pod.APIVersion != "v1" {
			t.Fatalf("after Create: rv=%q kind=%q apiVersion=%q; want 1, Pod, v1", pod.ResourceVersion, pod.Kind, pod.APIVersion)
		}
		node := storagetest.Node("n1", nil)
		if err := s.Create(ctx, node); err != nil {
			t.Fatalf("Create(n1) = %v; want nil", err)
		}

		tests := []struct {
			name                     string
			resource, namespace, key string
			want                     error
			wantRV                   string
		}{
			{"pod", "pods", "default", "web", nil, "1"},
			{"node", "nodes", "", "n1", nil, "2"},
			{"missing", "pods", "default", "nope", storage.ErrNotFound, ""},
			{"other namespace", "pods", "kube-system", "web", storage.ErrNotFound, ""},
			{"unknown resource", "widgets", "default", "web", storage.ErrInvalid, ""},
			{"no namespace", "pods", "", "web", storage.ErrInvalid, ""},
			{"namespace on cluster kind", "nodes", "default", "n1", storage.ErrInvalid, ""},
			{"empty name", "pods", "default", "", storage.ErrInvalid, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				obj, err := s.Get(ctx, tt.resource, tt.namespace, tt.key)
				if !errors.Is(err, tt.want) {
					t.Fatalf("Get(%q, %q, %q) = %v; want %v", tt.resource, tt.namespace, tt.key, err, tt.want)
				}
				if err != nil {
					return
				}
				if got := obj.GetObjectMeta().ResourceVersion; got != tt.wantRV {
					t.Errorf("Get(%q, %q, %q).resourceVersion = %q; want %q", tt.resource, tt.namespace, tt.key, got, tt.wantRV)
				}
				raw, rev, err := s.GetRaw(ctx, tt.resource, tt.namespace, tt.key)
				if err != nil || strconv.FormatInt(rev, 10) != tt.wantRV {
					t.Errorf("GetRaw(%q, %q, %q) = rev %d, %v; want %s, nil", tt.resource, tt.namespace, tt.key, rev, err, tt.wantRV)
				}
				decoded, err := api.DecodeObject(raw)
				if err != nil {
					t.Fatalf("DecodeObject(GetRaw) = %v; want nil", err)
				}
				if decoded.GetObjectMeta().ResourceVersion != tt.wantRV {
					t.Errorf("stored resourceVersion = %q; want %q", decoded.GetObjectMeta().ResourceVersion, tt.wantRV)
				}
			})
		}

		for _, bad := range []api.Object{nil, (*api.Pod)(nil), storagetest.Pod("", "no-namespace", nil), storagetest.Pod("default", "", nil)} {
			if err := s.Create(ctx, bad); !errors.Is(err, storage.ErrInvalid) {
				t.Errorf("Create(%T) = %v; want ErrInvalid", bad, err)
			}
		}
		if err := s.Create(ctx, storagetest.Pod("default", "web", nil)); !errors.Is(err, storage.ErrExists) {
			t.Errorf("Create(web) again = %v; want ErrExists", err)
		}

		got, err := s.Get(ctx, "pods", "default", "web")
		if err != nil {
			t.Fatal(err)
		}
		p := got.(*api.Pod)
		p.Spec.NodeName = "n1"
		if err := s.Update(ctx, p); err != nil {
			t.Fatalf("Update(web, rv 1) = %v; want nil", err)
		}
		if p.ResourceVersion != "3" {
			t.Errorf("Update(web).resourceVersion = %q; want 3", p.ResourceVersion)
		}

		del, err := s.Delete(ctx, "pods", "default", "web", "")
		if err != nil {
			t.Fatalf("Delete(web) = %v; want nil", err)
		}
		if del.GetObjectMeta().ResourceVersion != "4" || del.(*api.Pod).Spec.NodeName != "n1" {
			t.Errorf("Delete(web) = rv %q node %q; want rv 4 node n1", del.GetObjectMeta().ResourceVersion, del.(*api.Pod).Spec.NodeName)
		}
		if _, err := s.Get(ctx, "pods", "default", "web"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Get(web) after Delete = %v; want ErrNotFound", err)
		}
		if _, err := s.Delete(ctx, "pods", "default", "web", ""); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Delete(web) again = %v; want ErrNotFound", err)
		}
		if err := s.Update(ctx, storagetest.Pod("default", "web", nil)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Update(deleted web) = %v; want ErrNotFound", err)
		}
		if got := s.Revision(); got != 4 {
			t.Errorf("Revision() = %d; want 4 (failed writes take no revision)", got)
		}
	})
}

func TestUpdatePreconditions(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		cm := storagetest.ConfigMap("default", "cfg", map[string]string{"k": "v0"})
		if err := s.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		stale := cm.ResourceVersion
		cm.Data["k"] = "v1"
		if err := s.Update(ctx, cm); err != nil {
			t.Fatalf("Update(rv %s) = %v; want nil", stale, err)
		}

		tests := []struct {
			name string
			rv   string
			want error
		}{
			{"stale", stale, storage.ErrConflict},
			{"future", "999", storage.ErrConflict},
			{"garbage", "abc", storage.ErrInvalid},
			{"current", cm.ResourceVersion, nil},
			{"unconditional", "", nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				u := storagetest.ConfigMap("default", "cfg", map[string]string{"k": tt.name})
				u.ResourceVersion = tt.rv
				if tt.name == "current" {
					cur, _, err := s.GetRaw(ctx, "configmaps", "default", "cfg")
					if err != nil {
						t.Fatal(err)
					}
					obj, _ := api.DecodeObject(cur)
					u.ResourceVersion = obj.GetObjectMeta().ResourceVersion
				}
				if err := s.Update(ctx, u); !errors.Is(err, tt.want) {
					t.Fatalf("Update(rv %q) = %v; want %v", u.ResourceVersion, err, tt.want)
				}
			})
		}

		cur, err := s.Get(ctx, "configmaps", "default", "cfg")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delete(ctx, "configmaps", "default", "cfg", stale); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("Delete(stale rv %s) = %v; want ErrConflict", stale, err)
		}
		if _, err := s.Delete(ctx, "configmaps", "default", "cfg", cur.GetObjectMeta().ResourceVersion); err != nil {
			t.Errorf("Delete(current rv) = %v; want nil", err)
		}
	})
}

func TestGuaranteedUpdateConcurrent(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		if err := s.Create(ctx, storagetest.ConfigMap("default", "counter", map[string]string{"n": "0"})); err != nil {
			t.Fatal(err)
		}
		const goroutines, increments = 8, 50
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for range goroutines {
			wg.Go(func() {
				for range increments {
					_, err := s.GuaranteedUpdate(ctx, "configmaps", "default", "counter", func(cur api.Object) (api.Object, error) {
						cm := cur.(*api.ConfigMap)
						n, err := strconv.Atoi(cm.Data["n"])
						if err != nil {
							return nil, err
						}
						cm.Data["n"] = strconv.Itoa(n + 1)
						return cm, nil
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("GuaranteedUpdate = %v; want nil", err)
		}
		got, err := s.Get(ctx, "configmaps", "default", "counter")
		if err != nil {
			t.Fatal(err)
		}
		if n := got.(*api.ConfigMap).Data["n"]; n != strconv.Itoa(goroutines*increments) {
			t.Errorf("counter = %s; want %d", n, goroutines*increments)
		}
	})
}

func TestGuaranteedUpdateAbortAndNoop(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		if err := s.Create(ctx, storagetest.ConfigMap("default", "c", map[string]string{"a": "b"})); err != nil {
			t.Fatal(err)
		}
		abort := errors.New("abort")
		if _, err := s.GuaranteedUpdate(ctx, "configmaps", "default", "c", func(api.Object) (api.Object, error) { return nil, abort }); err != abort {
			t.Errorf("GuaranteedUpdate(fn fails) = %v; want fn's error as is", err)
		}
		rev := s.Revision()
		obj, err := s.GuaranteedUpdate(ctx, "configmaps", "default", "c", func(cur api.Object) (api.Object, error) { return cur, nil })
		if err != nil {
			t.Fatalf("GuaranteedUpdate(no change) = %v; want nil", err)
		}
		if got := s.Revision(); got != rev {
			t.Errorf("Revision() after a no-op update = %d; want %d", got, rev)
		}
		if got := obj.GetObjectMeta().ResourceVersion; got != fmt.Sprint(rev) {
			t.Errorf("no-op update resourceVersion = %q; want %d", got, rev)
		}
		if _, err := s.GuaranteedUpdate(ctx, "configmaps", "default", "gone", func(cur api.Object) (api.Object, error) { return cur, nil }); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("GuaranteedUpdate(missing) = %v; want ErrNotFound", err)
		}
	})
}

// GuaranteedUpdate must retry from the current state when a plain Update
// of the same object (another client's optimistic write) gets in between
// its read and its write; fn runs again on the new state.
func TestGuaranteedUpdateRetriesOnConflict(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storage.Options{})
		if err := s.Create(ctx, storagetest.ConfigMap("default", "c", map[string]string{"n": "0", "m": "0"})); err != nil {
			t.Fatal(err)
		}
		var seen []string
		got, err := s.GuaranteedUpdate(ctx, "configmaps", "default", "c", func(cur api.Object) (api.Object, error) {
			cm := cur.(*api.ConfigMap)
			seen = append(seen, cm.Data["m"])
			if len(seen) == 1 {
				// Another writer changes m after fn's read.
				other := storagetest.ConfigMap("default", "c", map[string]string{"n": "0", "m": "1"})
				other.ResourceVersion = cm.ResourceVersion
				if err := s.Update(ctx, other); err != nil {
					return nil, err
				}
			}
			cm.Data["n"] = "1"
			return cm, nil
		})
		if err != nil {
			t.Fatalf("GuaranteedUpdate = %v; want nil", err)
		}
		if strings.Join(seen, ",") != "0,1" {
			t.Errorf("fn saw m = %v; want [0 1] (a retry on the current state)", seen)
		}
		if d := got.(*api.ConfigMap).Data; d["n"] != "1" || d["m"] != "1" {
			t.Errorf("result = %v; want n=1 m=1", d)
		}
		if got.GetObjectMeta().ResourceVersion != fmt.Sprint(s.Revision()) {
			t.Errorf("result resourceVersion = %s; want %d", got.GetObjectMeta().ResourceVersion, s.Revision())
		}
	})
}

func TestStatsCountWritesAndWatchers(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		s := b.Open(t, storage.Options{})
		ctx := context.Background()
		before := s.Stats()
		for i := range 3 {
			if err := s.Create(ctx, storagetest.ConfigMap("default", fmt.Sprintf("s%d", i), nil)); err != nil {
				t.Fatal(err)
			}
		}
		w, err := s.Watch(ctx, "configmaps", storage.WatchOptions{FromNow: true})
		if err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.Writes-before.Writes != 3 || st.Commits-before.Commits < 1 || st.Revision != before.Revision+3 || st.Watchers != before.Watchers+1 {
			t.Fatalf("stats %+v after 3 creates and a watch (before %+v)", st, before)
		}
		w.Stop()
	})
}
