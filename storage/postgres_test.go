package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

var pgBackend = storagetest.Backend{Name: "postgres"}

// TestPostgresTwoServersWatchEveryRevisionInOrder writes from two Stores
// on one database at once (each with group commit) and checks that a
// watcher on each sees every revision, 1..N without a gap, in order, and
// the same value for each.
func TestPostgresTwoServersWatchEveryRevisionInOrder(t *testing.T) {
	ctx := context.Background()
	opts := pgBackend.Fresh(t, storage.Options{})
	a := storagetest.OpenAt(t, opts)
	b := storagetest.OpenAt(t, opts)
	wa, err := a.Watch(ctx, "configmaps", storage.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer wa.Stop()
	wb, err := b.Watch(ctx, "configmaps", storage.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Stop()
	const writers, each = 8, 40
	var wg sync.WaitGroup
	for g := range writers {
		s := a
		if g%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("g%d-%d", g, i)
				if err := s.Create(ctx, storagetest.ConfigMap("default", name, nil)); err != nil {
					t.Errorf("Create(%s) = %v", name, err)
					return
				}
				cm := storagetest.ConfigMap("default", name, map[string]string{"v": "2"})
				if err := s.Update(ctx, cm); err != nil {
					t.Errorf("Update(%s) = %v", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	n := writers * each * 2
	evA := storagetest.Collect(t, wa, n, waitEvent)
	evB := storagetest.Collect(t, wb, n, waitEvent)
	for i := range n {
		if evA[i].Revision != int64(i+1) || evB[i].Revision != int64(i+1) {
			t.Fatalf("event %d: revision %d on A, %d on B; want %d on both", i, evA[i].Revision, evB[i].Revision, i+1)
		}
		if string(evA[i].Value) != string(evB[i].Value) || evA[i].Type != evB[i].Type {
			t.Fatalf("revision %d differs between the servers: %s %s / %s %s", i+1, evA[i].Type, evA[i].Value, evB[i].Type, evB[i].Value)
		}
	}
	for _, s := range []*storage.Store{a, b} {
		if got := s.Revision(); got != int64(n) {
			t.Errorf("Revision() = %d; want %d", got, n)
		}
	}
	// A list on either server is the same snapshot at that revision.
	la, ra, errA := a.ListRaw(ctx, "configmaps", storage.ListOptions{})
	lb, rb, errB := b.ListRaw(ctx, "configmaps", storage.ListOptions{})
	if errA != nil || errB != nil || ra != rb || len(la) != writers*each || len(lb) != len(la) {
		t.Errorf("List on A = %d at %d, %v; on B = %d at %d, %v; want %d at %d", len(la), ra, errA, len(lb), rb, errB, writers*each, n)
	}
}

// TestPostgresFollowerPollsWithoutNotifications checks the fallback: a
// change committed without a NOTIFY (as if the notification were lost)
// still reaches the other server's watchers within the poll interval.
func TestPostgresFollowerPollsWithoutNotifications(t *testing.T) {
	ctx := context.Background()
	opts := pgBackend.Fresh(t, storage.Options{PollInterval: 50 * time.Millisecond})
	a := storagetest.OpenAt(t, opts)
	if err := a.Create(ctx, storagetest.ConfigMap("default", "seed", nil)); err != nil {
		t.Fatal(err)
	}
	w, err := a.Watch(ctx, "configmaps", storage.WatchOptions{Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Another "server" writes revision 2 by hand, without NOTIFY.
	db, err := sql.Open("pgx", opts.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src, _, err := a.GetRaw(ctx, "configmaps", "default", "seed")
	if err != nil {
		t.Fatal(err)
	}
	value := []byte(string(src)) // revision 1's value is fine as a payload
	_, err = db.ExecContext(ctx, `BEGIN;
		SELECT value FROM meta WHERE key IN ('lastts', 'revision') ORDER BY key FOR UPDATE;
		INSERT INTO changes (rev, resource, namespace, name, type, ts, value) VALUES (2, 'configmaps', 'default', 'seed', 2, 1, '`+string(value)+`');
		UPDATE meta SET value = 2 WHERE key = 'revision';
		COMMIT`)
	if err != nil {
		t.Fatal(err)
	}
	if ev := storagetest.Next(t, w, waitEvent); ev.Revision != 2 || ev.Type != storage.Modified {
		t.Errorf("event = %s at %d; want MODIFIED at 2", ev.Type, ev.Revision)
	}
}

// TestPostgresOutageAndRecovery stops PostgreSQL under two Stores: writes
// and reads fail with ErrUnavailable (no hang, no exit), and once it is
// back both recover without being reopened, including a watch on the
// other server.
func TestPostgresOutageAndRecovery(t *testing.T) {
	ctx := context.Background()
	cluster := storagetest.Postgres(t)
	// Its own cluster would be cleaner, but one restart of the shared one
	// is cheap; other tests in this binary run sequentially.
	opts := pgBackend.Fresh(t, storage.Options{PollInterval: 100 * time.Millisecond, WriteTimeout: 2 * time.Second})
	a := storagetest.OpenAt(t, opts)
	b := storagetest.OpenAt(t, opts)
	if err := a.Create(ctx, storagetest.ConfigMap("default", "before", nil)); err != nil {
		t.Fatal(err)
	}
	w, err := b.Watch(ctx, "configmaps", storage.WatchOptions{Revision: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = a.Create(ctx, storagetest.ConfigMap("default", "during", nil))
	if !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Create while PostgreSQL is down = %v; want ErrUnavailable", err)
	}
	if _, _, err := a.ListRaw(ctx, "configmaps", storage.ListOptions{}); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("List while PostgreSQL is down = %v; want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failing took %v; want it prompt", d)
	}
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	// The first write after the restart may meet a pooled connection that
	// died with the server; the one after must succeed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := a.Create(ctx, storagetest.ConfigMap("default", "after", nil))
		if err == nil {
			break
		}
		if !errors.Is(err, storage.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("Create after restart = %v; want nil", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ev := storagetest.Next(t, w, 10*time.Second); ev.Revision != 2 {
		t.Errorf("watch on the other server after restart: event at %d; want 2", ev.Revision)
	}
	if _, err := b.Get(ctx, "configmaps", "default", "after"); err != nil {
		t.Errorf("Get on the other server after restart = %v; want nil", err)
	}
}

// TestPostgresSlowDatastoreTimesOut holds the revision lock from outside,
// as a stuck server would: a write fails with DeadlineExceeded after
// WriteTimeout instead of hanging, and succeeds once the lock is gone.
func TestPostgresSlowDatastoreTimesOut(t *testing.T) {
	ctx := context.Background()
	opts := pgBackend.Fresh(t, storage.Options{WriteTimeout: 300 * time.Millisecond})
	s := storagetest.OpenAt(t, opts)
	db, err := sql.Open("pgx", opts.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT value FROM meta WHERE key = 'revision' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = s.Create(ctx, storagetest.ConfigMap("default", "slow", nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Create while the revision is locked = %v; want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Errorf("Create failed after %v; want about the 300ms WriteTimeout", d)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, storagetest.ConfigMap("default", "slow", nil)); err != nil {
		t.Errorf("Create after the lock is released = %v; want nil", err)
	}
}

// TestCopySQLiteToPostgres is what `skiff server migrate` does: the copy
// has the same objects, change log and revisions, a watch resumes in it,
// and a non-empty destination is refused.
func TestCopySQLiteToPostgres(t *testing.T) {
	ctx := context.Background()
	src := storagetest.Open(t, storage.Options{CompactMinRevisions: 5, CompactMinAge: time.Nanosecond, CompactInterval: -1})
	for i := range 30 {
		if err := src.Create(ctx, storagetest.Pod("default", fmt.Sprint("p", i), map[string]string{"i": fmt.Sprint(i)})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.Delete(ctx, "pods", "default", "p3", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	dst := pgBackend.Open(t, storage.Options{})
	rep, err := dst.CopyFrom(ctx, src)
	if err != nil {
		t.Fatalf("CopyFrom = %v; want nil", err)
	}
	want := storage.CopyReport{Revision: 31, Compacted: 26, Objects: 29, Changes: 5}
	if rep != want {
		t.Errorf("CopyFrom = %+v; want %+v", rep, want)
	}
	if dst.Revision() != 31 || dst.CompactedRevision() != 26 {
		t.Errorf("after copy: revision %d, compacted %d; want 31, 26", dst.Revision(), dst.CompactedRevision())
	}
	a, ra, _ := src.ListRaw(ctx, "pods", storage.ListOptions{})
	b, rb, err := dst.ListRaw(ctx, "pods", storage.ListOptions{})
	if err != nil || ra != rb || len(a) != len(b) {
		t.Fatalf("List: source %d at %d; copy %d at %d, %v", len(a), ra, len(b), rb, err)
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			t.Fatalf("object %d differs:\n%s\n%s", i, a[i], b[i])
		}
	}
	w, err := dst.Watch(ctx, "pods", storage.WatchOptions{Revision: 29})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := storagetest.Next(t, w, waitEvent); ev.Revision != 30 {
		t.Errorf("watch in the copy from 29: first event at %d; want 30", ev.Revision)
	}
	if err := dst.Create(ctx, storagetest.Pod("default", "new", nil)); err != nil {
		t.Fatal(err)
	}
	if ev := storagetest.Next(t, w, waitEvent); ev.Revision != 31 {
		t.Errorf("next event at %d; want 31", ev.Revision)
	}
	if ev := storagetest.Next(t, w, waitEvent); ev.Revision != 32 {
		t.Errorf("write after the copy at %d; want 32", ev.Revision)
	}
	if _, err := dst.CopyFrom(ctx, src); !errors.Is(err, storage.ErrExists) {
		t.Errorf("CopyFrom into a non-empty store = %v; want ErrExists", err)
	}
}

// TestPostgresChurnBounded: under churn, compaction keeps the change log
// to the retained revisions, and once PostgreSQL has vacuumed the table
// reuses its space: a second round of the same churn does not grow it.
func TestPostgresChurnBounded(t *testing.T) {
	ctx := context.Background()
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := pgBackend.Fresh(t, storage.Options{Clock: fake, CompactMinRevisions: 200, CompactMinAge: time.Minute, CompactInterval: -1})
	s := storagetest.OpenAt(t, opts)
	db, err := sql.Open("pgx", opts.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const objects, rounds = 50, 40
	churn := func() {
		for r := range rounds {
			var objs []api.Object
			for i := range objects {
				objs = append(objs, storagetest.ConfigMap("default", fmt.Sprint("c", i), map[string]string{"r": fmt.Sprint(r), "pad": strings.Repeat("x", 1000)}))
			}
			for i, err := range s.UpdateBatch(ctx, objs) {
				if errors.Is(err, storage.ErrNotFound) {
					err = s.Create(ctx, objs[i])
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		fake.Advance(2 * time.Minute)
		if _, err := s.Compact(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "VACUUM changes"); err != nil {
			t.Fatal(err)
		}
	}
	size := func() (rows, bytes int64) {
		if err := db.QueryRowContext(ctx, "SELECT count(*), pg_total_relation_size('changes') FROM changes").Scan(&rows, &bytes); err != nil {
			t.Fatal(err)
		}
		return rows, bytes
	}
	churn()
	rows1, bytes1 := size()
	churn()
	rows2, bytes2 := size()
	if rows1 > 200 || rows2 > 200 {
		t.Errorf("change log rows after compaction = %d, %d; want at most the 200 retained", rows1, rows2)
	}
	if bytes2 > bytes1*3/2 {
		t.Errorf("change log grew from %d to %d bytes over a second round of the same churn; want its space reused", bytes1, bytes2)
	}
	t.Logf("after %d revisions: %d rows, %d bytes; after %d: %d rows, %d bytes", objects*rounds, rows1, bytes1, 2*objects*rounds, rows2, bytes2)
}

// TestPostgresOpenWhileAnotherServerWrites: a server starting while
// another one writes reads consistent counters. It read the revision and
// the change log in separate statements, so a commit between them looked
// like a change log ahead of its revision ("database corrupt"), and the
// second server refused to start (seen under emulation on arm64).
func TestPostgresOpenWhileAnotherServerWrites(t *testing.T) {
	ctx := context.Background()
	opts := pgBackend.Fresh(t, storage.Options{})
	a := storagetest.OpenAt(t, opts)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := a.Create(ctx, storagetest.ConfigMap("default", fmt.Sprintf("w%d-%d", g, i), nil)); err != nil {
					t.Errorf("Create on A = %v", err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 40 {
		b, err := storage.Open(ctx, opts)
		if err != nil {
			t.Fatalf("open %d of a second server while the first writes = %v; want nil", i+1, err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("close %d = %v", i+1, err)
		}
	}
}
