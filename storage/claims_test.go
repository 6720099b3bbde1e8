package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// claimV claims "v/<data.v>" for a ConfigMap with a "v" key.
func claimV(obj api.Object) []string {
	cm := obj.(*api.ConfigMap)
	if v, ok := cm.Data["v"]; ok {
		return []string{"v/" + v}
	}
	return nil
}

var claimOpts = storage.Options{Claims: map[string]storage.ClaimFunc{"configmaps": claimV}}

func TestClaimsRefuseAHeldClaim(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, claimOpts)
		if err := s.Create(ctx, storagetest.ConfigMap("default", "a", map[string]string{"v": "1"})); err != nil {
			t.Fatal(err)
		}
		err := s.Create(ctx, storagetest.ConfigMap("default", "b", map[string]string{"v": "1"}))
		var ce *storage.ClaimError
		if !errors.As(err, &ce) || !errors.Is(err, storage.ErrClaimed) || ce.Claim != "v/1" || ce.Owner != "configmaps/default/a" {
			t.Fatalf("Create(b, v=1) = %v; want a ClaimError for v/1 held by configmaps/default/a", err)
		}
		if _, err := s.Get(ctx, "configmaps", "default", "b"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Get(b) after a refused create = %v; want ErrNotFound", err)
		}
		// The holder may rewrite its own claim.
		if err := s.Update(ctx, storagetest.ConfigMap("default", "a", map[string]string{"v": "1", "x": "y"})); err != nil {
			t.Fatalf("Update(a) keeping its claim = %v", err)
		}
		// Moving a to v=2 frees v/1.
		if err := s.Update(ctx, storagetest.ConfigMap("default", "a", map[string]string{"v": "2"})); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, storagetest.ConfigMap("default", "b", map[string]string{"v": "1"})); err != nil {
			t.Fatalf("Create(b, v=1) after a moved = %v", err)
		}
		// An update onto a held claim is refused and changes nothing.
		err = s.Update(ctx, storagetest.ConfigMap("default", "b", map[string]string{"v": "2"}))
		if !errors.As(err, &ce) || ce.Claim != "v/2" {
			t.Fatalf("Update(b, v=2) = %v; want a ClaimError for v/2", err)
		}
		got, err := s.Get(ctx, "configmaps", "default", "b")
		if err != nil || got.(*api.ConfigMap).Data["v"] != "1" {
			t.Fatalf("Get(b) = %v, %v; want v=1 unchanged", got, err)
		}
		// Deleting frees.
		if _, err := s.Delete(ctx, "configmaps", "default", "a", ""); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, storagetest.ConfigMap("default", "c", map[string]string{"v": "2"})); err != nil {
			t.Fatalf("Create(c, v=2) after a was deleted = %v", err)
		}
	})
}

// TestClaimsFilledFromObjectsStoredBefore opens a store without claims,
// writes, and reopens it with claims: the claims table is filled from the
// stored objects.
func TestClaimsFilledFromObjectsStoredBefore(t *testing.T) {
	storagetest.ForEachBackend(t, func(t *testing.T, b storagetest.Backend) {
		ctx := context.Background()
		opts := b.Fresh(t, storage.Options{})
		s := storagetest.OpenAt(t, opts)
		if err := s.Create(ctx, storagetest.ConfigMap("default", "a", map[string]string{"v": "1"})); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		opts.Claims = claimOpts.Claims
		s = storagetest.OpenAt(t, opts)
		if err := s.Create(ctx, storagetest.ConfigMap("default", "b", map[string]string{"v": "1"})); !errors.Is(err, storage.ErrClaimed) {
			t.Fatalf("Create(b, v=1) after reopening with claims = %v; want ErrClaimed", err)
		}
	})
}

// TestPostgresClaimsTwoServersNeverShareAClaim has writers on two Stores
// of one database race for a few claims: every claim ends held by at
// most one stored object, and every refusal names a claim that is held.
func TestPostgresClaimsTwoServersNeverShareAClaim(t *testing.T) {
	ctx := context.Background()
	opts := pgBackend.Fresh(t, claimOpts)
	stores := []*storage.Store{storagetest.OpenAt(t, opts), storagetest.OpenAt(t, opts)}
	const writers, each, pool = 8, 30, 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for g := range writers {
		s := stores[g%2]
		wg.Go(func() {
			for i := range each {
				cm := storagetest.ConfigMap("default", fmt.Sprintf("g%d-%d", g, i), map[string]string{"v": fmt.Sprint((g*7 + i) % pool)})
				err := s.Create(ctx, cm)
				switch {
				case err == nil:
					mu.Lock()
					created++
					mu.Unlock()
				case errors.Is(err, storage.ErrClaimed):
				default:
					t.Errorf("Create(%s) = %v", cm.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	objs, _, err := stores[0].List(ctx, "configmaps", storage.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{}
	for _, o := range objs {
		cm := o.(*api.ConfigMap)
		if prev, ok := held[cm.Data["v"]]; ok {
			t.Errorf("claim v/%s is held by both %s and %s", cm.Data["v"], prev, cm.Name)
		}
		held[cm.Data["v"]] = cm.Name
	}
	if len(objs) != created || created != pool {
		t.Errorf("stored %d, created %d; want every one of the %d claims taken exactly once", len(objs), created, pool)
	}
}
