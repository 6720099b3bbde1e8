package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// TestPostgresLeaseFencing: one holder at a time; a lease changes hands
// only once it lapsed or was released, with a new epoch; a deposed
// holder's fenced writes fail with ErrFenced while the new holder's
// commit.
func TestPostgresLeaseFencing(t *testing.T) {
	ctx := context.Background()
	opts := pgBackend.Fresh(t, storage.Options{})
	a := storagetest.OpenAt(t, opts)
	b := storagetest.OpenAt(t, opts)
	const ttl = 500 * time.Millisecond
	ea, held, err := a.AcquireLease(ctx, "leader", "a", ttl)
	if err != nil || !held || ea != 1 {
		t.Fatalf("A AcquireLease = %d, %v, %v; want 1, true, nil", ea, held, err)
	}
	if _, held, err := b.AcquireLease(ctx, "leader", "b", ttl); err != nil || held {
		t.Fatalf("B AcquireLease while A holds it = %v, %v; want false, nil", held, err)
	}
	if e, held, err := a.AcquireLease(ctx, "leader", "a", ttl); err != nil || !held || e != ea {
		t.Fatalf("A renews = %d, %v, %v; want %d, true, nil", e, held, err, ea)
	}
	fa := storage.WithFence(ctx, storage.Fence{Lease: "leader", Epoch: ea})
	if err := a.Create(fa, storagetest.ConfigMap("default", "by-a", nil)); err != nil {
		t.Fatalf("fenced Create by the holder = %v; want nil", err)
	}
	// A stops renewing (as if killed); B takes over once the lease lapses.
	start := time.Now()
	var eb int64
	for {
		eb, held, err = b.AcquireLease(ctx, "leader", "b", ttl)
		if err != nil {
			t.Fatal(err)
		}
		if held {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("B never acquired the lapsed lease")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d := time.Since(start); d < ttl/2 {
		t.Errorf("B took over after %v; want after the lease lapsed (%v)", d, ttl)
	}
	if eb != ea+1 {
		t.Errorf("B's epoch = %d; want %d", eb, ea+1)
	}
	err = a.Create(fa, storagetest.ConfigMap("default", "deposed", nil))
	if !errors.Is(err, storage.ErrFenced) {
		t.Errorf("fenced Create by the deposed holder = %v; want ErrFenced", err)
	}
	cm := storagetest.ConfigMap("default", "by-a", map[string]string{"x": "y"})
	if err := a.Update(fa, cm); !errors.Is(err, storage.ErrFenced) {
		t.Errorf("fenced Update by the deposed holder = %v; want ErrFenced", err)
	}
	if _, err := a.Get(ctx, "configmaps", "default", "deposed"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the deposed holder's write is stored: Get = %v; want ErrNotFound", err)
	}
	fb := storage.WithFence(ctx, storage.Fence{Lease: "leader", Epoch: eb})
	if err := b.Create(fb, storagetest.ConfigMap("default", "by-b", nil)); err != nil {
		t.Errorf("fenced Create by the new holder = %v; want nil", err)
	}
	// Unfenced writes are not affected.
	if err := a.Create(ctx, storagetest.ConfigMap("default", "plain", nil)); err != nil {
		t.Errorf("unfenced Create = %v; want nil", err)
	}
	// A clean handover: B releases, A takes it at once.
	if err := b.ReleaseLease(ctx, "leader", "b", eb); err != nil {
		t.Fatal(err)
	}
	if e, held, err := a.AcquireLease(ctx, "leader", "a", ttl); err != nil || !held || e != eb+1 {
		t.Errorf("A after B released = %d, %v, %v; want %d, true, nil", e, held, err, eb+1)
	}
	if err := b.Create(fb, storagetest.ConfigMap("default", "late", nil)); !errors.Is(err, storage.ErrFenced) {
		t.Errorf("fenced Create after release = %v; want ErrFenced", err)
	}
}

// TestSQLiteLeaseAlwaysHeld: a SQLite store has one server, which always
// leads.
func TestSQLiteLeaseAlwaysHeld(t *testing.T) {
	ctx := context.Background()
	s := storagetest.Open(t, storage.Options{})
	e, held, err := s.AcquireLease(ctx, "leader", "a", time.Second)
	if err != nil || !held || e != 1 {
		t.Fatalf("AcquireLease = %d, %v, %v; want 1, true, nil", e, held, err)
	}
	f := storage.WithFence(ctx, storage.Fence{Lease: "leader", Epoch: e})
	if err := s.Create(f, storagetest.ConfigMap("default", "x", nil)); err != nil {
		t.Errorf("fenced Create = %v; want nil", err)
	}
	if got, err := s.ShareBlob(ctx, "ca", []byte("mine")); err != nil || string(got) != "mine" {
		t.Errorf("ShareBlob = %q, %v; want mine, nil", got, err)
	}
}

// TestPostgresShareBlobFirstWins: the first server's blob is everyone's.
func TestPostgresShareBlobFirstWins(t *testing.T) {
	ctx := context.Background()
	opts := pgBackend.Fresh(t, storage.Options{})
	a := storagetest.OpenAt(t, opts)
	b := storagetest.OpenAt(t, opts)
	if got, err := a.ShareBlob(ctx, "ca", []byte("from-a")); err != nil || string(got) != "from-a" {
		t.Fatalf("A ShareBlob = %q, %v; want from-a, nil", got, err)
	}
	if got, err := b.ShareBlob(ctx, "ca", []byte("from-b")); err != nil || string(got) != "from-a" {
		t.Fatalf("B ShareBlob = %q, %v; want from-a, nil", got, err)
	}
	if got, ok, err := b.Blob(ctx, "ca"); err != nil || !ok || string(got) != "from-a" {
		t.Fatalf("B Blob(ca) = %q, %v, %v; want from-a, true, nil", got, ok, err)
	}
	if _, ok, err := b.Blob(ctx, "missing"); err != nil || ok {
		t.Fatalf("Blob(missing) = %v, %v; want false, nil", ok, err)
	}
}

// TestPostgresShareLivenessKeepsLatest: heartbeats seen by either server
// are merged, the later time winning.
func TestPostgresShareLivenessKeepsLatest(t *testing.T) {
	ctx := context.Background()
	opts := pgBackend.Fresh(t, storage.Options{})
	a := storagetest.OpenAt(t, opts)
	b := storagetest.OpenAt(t, opts)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := a.ShareLiveness(ctx, map[string]time.Time{"n1": t0.Add(2 * time.Second), "n2": t0}); err != nil {
		t.Fatal(err)
	}
	got, err := b.ShareLiveness(ctx, map[string]time.Time{"n1": t0.Add(time.Second), "n3": t0})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{"n1": t0.Add(2 * time.Second), "n2": t0, "n3": t0}
	if len(got) != len(want) {
		t.Fatalf("ShareLiveness = %v; want %v", got, want)
	}
	for n, w := range want {
		if !got[n].Equal(w) {
			t.Errorf("ShareLiveness[%s] = %v; want %v", n, got[n], w)
		}
	}
	if err := a.ForgetLiveness(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if got, err := a.ShareLiveness(ctx, nil); err != nil || len(got) != 2 {
		t.Errorf("after ForgetLiveness(n2): %v, %v; want 2 nodes", got, err)
	}
}
