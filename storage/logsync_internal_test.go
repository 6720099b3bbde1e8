package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// setFsync replaces how the store's logSyncer syncs the log.
func setFsync(t *testing.T, s *Store, f func(*os.File) error) {
	t.Helper()
	s.syncer.fileMu.Lock()
	defer s.syncer.fileMu.Unlock()
	s.syncer.fsync = f
}

// heldSync makes the next syncs wait: entered receives once a sync
// has begun (everything before it committed), and each send on
// release lets one finish.
type heldSync struct {
	entered chan struct{}
	release chan struct{}
}

// holdSyncs holds s's syncs until the test ends; s must have been
// opened with openSyncTest, so that it closes after they are let go.
func holdSyncs(t *testing.T, s *Store) *heldSync {
	h := &heldSync{entered: make(chan struct{}, 64), release: make(chan struct{})}
	free := make(chan struct{})
	t.Cleanup(func() { close(free) })
	setFsync(t, s, func(f *os.File) error {
		select {
		case h.entered <- struct{}{}:
		default:
		}
		select {
		case <-h.release:
		case <-free:
		}
		return fdatasync(f)
	})
	return h
}

// openSyncTest opens a store in a temporary directory, closed when the
// test ends.
func openSyncTest(t *testing.T, opts Options) *Store {
	t.Helper()
	opts.Path = filepath.Join(t.TempDir(), "state.db")
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (h *heldSync) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no sync of the log began")
	}
}

// TestWriteAnsweredAfterTheLogSync: a write the writer has committed is
// neither acknowledged, nor shown to watchers, nor returned by a read
// (hot cache and database alike) until the log holding it is synced.
func TestWriteAnsweredAfterTheLogSync(t *testing.T) {
	for _, hot := range []int{0, -1} {
		t.Run(fmt.Sprintf("hot=%d", hot), func(t *testing.T) {
			ctx := context.Background()
			s := openSyncTest(t, Options{HotObjects: hot})
			w, err := s.Watch(ctx, "pods", WatchOptions{FromNow: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			h := holdSyncs(t, s)
			pod := fixtures.Pod("default", "a", nil)
			pod.Spec.NodeName = "n1"
			created := make(chan error, 1)
			go func() { created <- s.Create(ctx, pod) }()
			h.waitEntered(t)

			// Committed: the writer has gone on, and the database holds it.
			if got := s.committedRev.Load(); got <= s.Revision() {
				t.Fatalf("committed revision %d, published %d: want the write committed and not published", got, s.Revision())
			}
			select {
			case err := <-created:
				t.Fatalf("Create answered (%v) before the log was synced", err)
			case ev := <-w.Events():
				t.Fatalf("watch event %v before the log was synced", ev.Type)
			default:
			}
			done, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := s.Get(done, "pods", "default", "a"); !errors.Is(err, context.Canceled) {
				t.Errorf("Get before the sync = %v; want it to wait (context.Canceled)", err)
			}
			if _, err := s.NodeOf(done, "pods", "default", "a"); !errors.Is(err, context.Canceled) {
				t.Errorf("NodeOf before the sync = %v; want it to wait (context.Canceled)", err)
			}
			listed := make(chan int, 1)
			go func() {
				objs, _, err := s.List(ctx, "pods", ListOptions{})
				if err != nil {
					t.Errorf("List: %v", err)
				}
				listed <- len(objs)
			}()

			h.release <- struct{}{}
			if err := <-created; err != nil {
				t.Fatalf("Create = %v", err)
			}
			if n := <-listed; n != 1 {
				t.Errorf("List returned %d pods; want 1 (it waited for the sync)", n)
			}
			select {
			case ev := <-w.Events():
				if ev.Type != Added {
					t.Errorf("watch event %v; want Added", ev.Type)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no watch event after the sync")
			}
			if node, err := s.NodeOf(done, "pods", "default", "a"); err != nil || node != "n1" {
				t.Errorf("NodeOf after the sync = %q, %v; want n1", node, err)
			}
		})
	}
}

// TestWriterRunsOneTransactionAheadOfTheSync: while a sync runs, the
// writer commits one more transaction, then waits for the sync before it
// begins another.
func TestWriterRunsOneTransactionAheadOfTheSync(t *testing.T) {
	ctx := context.Background()
	s := openSyncTest(t, Options{})
	h := holdSyncs(t, s)
	syncs0, commits0 := s.syncs.Load(), s.commits.Load()
	var wg sync.WaitGroup
	var first error
	wg.Go(func() { first = s.Create(ctx, fixtures.ConfigMap("default", "first", nil)) })
	h.waitEntered(t)
	// Two batches, a transaction each (a writer task each).
	errs := make([][]error, 2)
	for i := range errs {
		wg.Go(func() {
			errs[i] = s.CreateBatch(ctx, []api.Object{
				fixtures.ConfigMap("default", fmt.Sprint("a", i), nil),
				fixtures.ConfigMap("default", fmt.Sprint("b", i), nil),
			})
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.syncer.waits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the writer never waited for a sync; %d transactions committed", s.commits.Load()-commits0)
		}
		time.Sleep(time.Millisecond)
	}
	if got := s.commits.Load() - commits0; got != 2 {
		t.Errorf("%d transactions committed while the first sync was held; want 2 (one ahead)", got)
	}
	for i := range 3 { // the first's, then each batch's
		h.release <- struct{}{}
		if i < 2 {
			h.waitEntered(t)
		}
	}
	wg.Wait()
	if first != nil {
		t.Errorf("Create = %v", first)
	}
	for i, es := range errs {
		for _, err := range es {
			if err != nil {
				t.Errorf("CreateBatch %d: %v", i, err)
			}
		}
	}
	if got := s.syncs.Load() - syncs0; got != 3 {
		t.Errorf("%d syncs for three transactions; want 3", got)
	}
	if got, want := s.Revision(), s.committedRev.Load(); got != want {
		t.Errorf("published revision %d; want %d", got, want)
	}
}

// TestLogSyncFailureStopsWrites: a write whose sync fails is answered
// with ErrSyncFailed and never shown; the store then takes no more
// writes, as the kernel may have dropped pages it could not write.
func TestLogSyncFailureStopsWrites(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer // written before the failed write is answered
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db"), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := s.Watch(ctx, "configmaps", WatchOptions{FromNow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rev := s.Revision()
	setFsync(t, s, func(*os.File) error { return syscall.EIO })
	if err := s.Create(ctx, fixtures.ConfigMap("default", "lost", nil)); !errors.Is(err, ErrSyncFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Create with a failing sync = %v; want ErrSyncFailed and EIO", err)
	}
	if got := s.Revision(); got != rev {
		t.Errorf("Revision() = %d; want %d (nothing published)", got, rev)
	}
	select {
	case ev := <-w.Events():
		t.Errorf("watch event %v for a write whose sync failed", ev.Type)
	default:
	}
	if _, err := s.Get(ctx, "configmaps", "default", "lost"); !errors.Is(err, ErrSyncFailed) {
		t.Errorf("Get of the write = %v; want ErrSyncFailed", err)
	}
	setFsync(t, s, fdatasync) // the disk is back: still no writes
	if err := s.Create(ctx, fixtures.ConfigMap("default", "next", nil)); !errors.Is(err, ErrSyncFailed) {
		t.Errorf("Create after a failed sync = %v; want ErrSyncFailed", err)
	}
	if errs := s.CreateBatch(ctx, []api.Object{fixtures.ConfigMap("default", "batch", nil)}); !errors.Is(errs[0], ErrSyncFailed) {
		t.Errorf("CreateBatch after a failed sync = %v; want ErrSyncFailed", errs[0])
	}
	if !strings.Contains(logs.String(), "syncing the write-ahead log failed") {
		t.Errorf("no error logged; logs:\n%s", logs.String())
	}
}

// TestLogSyncerSyncsTheLogFile: the syncer's descriptor is the log
// SQLite writes, before and after a truncating checkpoint, and a task
// (here the checkpoint) syncs before it answers.
func TestLogSyncerSyncsTheLogFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var synced []os.FileInfo
	setFsync(t, s, func(f *os.File) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		synced = append(synced, fi) // under fileMu
		return fdatasync(f)
	})
	check := func(when string) {
		t.Helper()
		s.syncer.fileMu.Lock()
		defer s.syncer.fileMu.Unlock()
		wal, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		if len(synced) == 0 {
			t.Fatalf("%s: no sync", when)
		}
		if last := synced[len(synced)-1]; !os.SameFile(last, wal) {
			t.Errorf("%s: synced %v, not the log", when, last)
		}
		synced = synced[:0]
	}
	if err := s.Create(ctx, fixtures.ConfigMap("default", "a", nil)); err != nil {
		t.Fatal(err)
	}
	check("after a create")
	if err := s.be.checkpoint(ctx, s); err != nil {
		t.Fatal(err)
	}
	check("after a truncating checkpoint")
	if err := s.Create(ctx, fixtures.ConfigMap("default", "b", nil)); err != nil {
		t.Fatal(err)
	}
	check("after a create into the truncated log")
}

// TestConflictAnsweredAfterTheSyncBeforeIt: a write that fails its
// precondition against a write not yet synced is answered after that
// sync (its error says what the database holds), and needs no sync of
// its own.
func TestConflictAnsweredAfterTheSyncBeforeIt(t *testing.T) {
	ctx := context.Background()
	s := openSyncTest(t, Options{})
	h := holdSyncs(t, s)
	syncs0 := s.syncs.Load()
	created := make(chan error, 1)
	go func() { created <- s.Create(ctx, fixtures.ConfigMap("default", "a", nil)) }()
	h.waitEntered(t)
	stale := fixtures.ConfigMap("default", "a", map[string]string{"k": "v"})
	stale.ResourceVersion = "999" // not the revision the create gets
	updated := make(chan error, 1)
	go func() { updated <- s.Update(ctx, stale) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.syncer.queue) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the conflicting update never reached the syncer")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-updated:
		t.Fatalf("Update answered (%v) before the sync of the create it conflicts with", err)
	default:
	}
	h.release <- struct{}{}
	if err := <-created; err != nil {
		t.Fatalf("Create = %v", err)
	}
	if err := <-updated; !errors.Is(err, ErrConflict) {
		t.Errorf("Update with a stale revision = %v; want ErrConflict", err)
	}
	if got := s.syncs.Load() - syncs0; got != 1 {
		t.Errorf("%d syncs; want 1 (the create's)", got)
	}
}

// TestLargeTransactionsDoNotWaitForTheSync: a transaction of
// syncAheadBatch writes or more begins while the syncs before it are
// held, and one sync answers every transaction queued when it begins.
func TestLargeTransactionsDoNotWaitForTheSync(t *testing.T) {
	ctx := context.Background()
	s := openSyncTest(t, Options{})
	h := holdSyncs(t, s)
	syncs0, commits0 := s.syncs.Load(), s.commits.Load()
	var wg sync.WaitGroup
	var first error
	wg.Go(func() { first = s.Create(ctx, fixtures.ConfigMap("default", "first", nil)) })
	h.waitEntered(t)
	errs := make([][]error, 3)
	for i := range errs {
		objs := make([]api.Object, syncAheadBatch)
		for j := range objs {
			objs[j] = fixtures.ConfigMap("default", fmt.Sprintf("b%d-%d", i, j), nil)
		}
		wg.Go(func() { errs[i] = s.CreateBatch(ctx, objs) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.commits.Load()-commits0 < 1+int64(len(errs)) {
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions committed while a sync was held; want %d: the large ones must not wait", s.commits.Load()-commits0, 1+len(errs))
		}
		time.Sleep(time.Millisecond)
	}
	for len(s.syncer.queue) < len(errs) { // each is queued right after its commit
		if time.Now().After(deadline) {
			t.Fatalf("%d transactions queued for a sync; want %d", len(s.syncer.queue), len(errs))
		}
		time.Sleep(time.Millisecond)
	}
	if w := s.syncer.waits.Load(); w != 0 {
		t.Errorf("the writer waited %d times for a sync; want 0", w)
	}
	h.release <- struct{}{} // the first's
	h.waitEntered(t)
	h.release <- struct{}{} // one for the three
	wg.Wait()
	if first != nil {
		t.Errorf("Create = %v", first)
	}
	for i, es := range errs {
		for _, err := range es {
			if err != nil {
				t.Errorf("CreateBatch %d: %v", i, err)
			}
		}
	}
	if got := s.syncs.Load() - syncs0; got != 2 {
		t.Errorf("%d syncs for four transactions; want 2", got)
	}
}
