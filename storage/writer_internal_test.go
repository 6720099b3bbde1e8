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
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// TestSQLiteNoSpace fills the database up to a page limit set on the
// writer's connection: the failing group of writes must fail as a whole
// with ErrNoSpace, take no revision and publish nothing, and the store
// must work again once space is available.
func TestSQLiteNoSpace(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := s.Watch(ctx, "configmaps", WatchOptions{FromNow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := s.Create(ctx, fixtures.ConfigMap("default", "before", nil)); err != nil {
		t.Fatal(err)
	}
	setMaxPages(t, s, 0)
	rev := s.Revision()
	big := map[string]string{"data": strings.Repeat("x", 64<<10)}
	var wg sync.WaitGroup
	errs := make([]error, 16)
	for i := range errs {
		wg.Go(func() {
			errs[i] = s.Create(ctx, fixtures.ConfigMap("default", fmt.Sprint("big", i), big))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrNoSpace) {
			t.Errorf("Create(big%d) on a full database = %v; want ErrNoSpace", i, err)
		}
	}
	if got := s.Revision(); got != rev {
		t.Errorf("Revision() after failed writes = %d; want %d", got, rev)
	}
	if _, _, err := s.GetRaw(ctx, "configmaps", "default", "before"); err != nil {
		t.Errorf("GetRaw on a full database = %v; want nil (reads keep working)", err)
	}

	setMaxPages(t, s, 1<<20)
	if err := s.Create(ctx, fixtures.ConfigMap("default", "after", big)); err != nil {
		t.Fatalf("Create after freeing space = %v; want nil", err)
	}
	if got := s.Revision(); got != rev+1 {
		t.Errorf("Revision() = %d; want %d (no gap)", got, rev+1)
	}
	for _, want := range []int64{rev, rev + 1} {
		select {
		case ev := <-w.Events():
			if ev.Revision != want {
				t.Errorf("watch event at %d; want %d", ev.Revision, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no watch event at %d", want)
		}
	}
}

// TestSQLitePragmas pins the settings durability and bounded disk use
// rest on, on the writer's connection and on the read pool.
func TestSQLitePragmas(t *testing.T) {
	ctx := context.Background()
	// A path SQLite's URI syntax would trip on if it were not escaped.
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "a dir #1", "state?.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[string]string{
		"synchronous":        "2", // FULL
		"journal_mode":       "wal",
		"auto_vacuum":        "2", // INCREMENTAL
		"foreign_keys":       "0",
		"application_id":     fmt.Sprint(applicationID),
		"user_version":       fmt.Sprint(schemaVersion),
		"journal_size_limit": fmt.Sprint(journalSizeLimit),
		"busy_timeout":       fmt.Sprint(busyTimeout.Milliseconds()),
		"query_only":         "0",
	}
	got := map[string]string{}
	err = s.submit(ctx, &op{kind: opTask, task: func(ctx context.Context, w *writer) error {
		for p := range want {
			var v string
			if err := w.conn.QueryRowContext(ctx, "PRAGMA "+p).Scan(&v); err != nil {
				return err
			}
			got[p] = v
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for p, v := range want {
		if got[p] != v {
			t.Errorf("writer PRAGMA %s = %s; want %s", p, got[p], v)
		}
	}
	for p, v := range map[string]string{"query_only": "1", "synchronous": "2"} {
		var g string
		if err := s.rdb.QueryRowContext(ctx, "PRAGMA "+p).Scan(&g); err != nil {
			t.Fatal(err)
		}
		if g != v {
			t.Errorf("reader PRAGMA %s = %s; want %s", p, g, v)
		}
	}
}

// TestSlowWriteLogged: a task or transaction that holds the writer past
// slowWrite (by the Store's clock) is counted and logged with what it
// was; a quick one is not.
func TestSlowWriteLogged(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Unix(1_800_000_000, 0))
	var logs bytes.Buffer
	s, err := Open(ctx, Options{
		Path: filepath.Join(t.TempDir(), "state.db"), Clock: clk,
		CompactInterval: -1, CheckpointInterval: -1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	task := func(d time.Duration) error {
		return s.submit(ctx, &op{kind: opTask, what: "checkpoint", task: func(context.Context, *writer) error {
			clk.Advance(d) // the task "takes" d
			return nil
		}})
	}
	if err := task(slowWrite / 10); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().SlowWrites; n != 0 || strings.Contains(logs.String(), "slow write") {
		t.Fatalf("a quick task: %d slow writes, log %q; want none", n, logs.String())
	}
	if err := task(2 * slowWrite); err != nil {
		t.Fatal(err)
	}
	if n := s.Stats().SlowWrites; n != 1 {
		t.Errorf("a task holding the writer %v: %d slow writes; want 1", 2*slowWrite, n)
	}
	if l := logs.String(); !strings.Contains(l, "slow write") || !strings.Contains(l, "what=checkpoint") || !strings.Contains(l, "took=1s") {
		t.Errorf("log = %q; want a slow write warning naming the checkpoint and its 1s", l)
	}
}

// TestCheckpointCopiesBesideTheWriter: the copy of the write-ahead log
// into the database runs on a read connection (query_only allows a
// checkpoint) while a write commits, so the writer's truncating
// checkpoint has little left to copy; the log ends empty and nothing is
// lost.
func TestCheckpointCopiesBesideTheWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, Options{Path: path, CompactInterval: -1, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := s.be.(*sqliteBackend)
	if !ok {
		t.Fatalf("backend %T; want SQLite", s.be)
	}
	for i := range 300 {
		if err := s.Create(ctx, fixtures.Pod("default", fmt.Sprintf("p%03d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	// A write in flight on the writer while the copy runs beside it.
	wrote := make(chan error, 1)
	go func() { wrote <- s.Create(ctx, fixtures.Pod("default", "during", nil)) }()
	logFrames, done, err := b.passiveCheckpoint(ctx, s)
	if err != nil {
		t.Fatalf("passive checkpoint on a read connection = %v", err)
	}
	if logFrames == 0 || done == 0 {
		t.Fatalf("passive checkpoint copied %d of %d frames; want the log copied", done, logFrames)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := b.checkpoint(ctx, s); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path + "-wal"); err != nil || st.Size() != 0 {
		t.Errorf("write-ahead log after the checkpoint: %v, %v; want it truncated to 0", st, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Options{Path: path, CompactInterval: -1, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range []string{"p000", "p299", "during"} {
		if _, err := s.Get(ctx, "pods", "default", name); err != nil {
			t.Errorf("pod %s after the checkpoint and a reopen: %v", name, err)
		}
	}
}

// TestBatchesGoFirst: a batch (a controller's creates, the scheduler's
// binds) submitted behind queued single writes (a fleet's status writes)
// is committed before them, so a control loop waiting for its batch does
// not wait out the queue; but the lanes take turns, so a second batch
// waits for the single writes queued before it (strict priority starved
// them while batches kept coming). A batch under LowPriority (events)
// goes last, after every write queued with or after it.
func TestBatchesGoFirst(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	release := holdWriter(ctx, s, &wg)
	singles := make([]api.Object, 8)
	singleErrs := make([]error, len(singles))
	for i := range singles {
		singles[i] = fixtures.ConfigMap("default", fmt.Sprint("single", i), nil)
		wg.Go(func() { singleErrs[i] = s.Create(ctx, singles[i]) })
	}
	waitUntil(t, "the single writes queued", func() bool { return len(s.ops) == len(singles) })
	low := []api.Object{fixtures.ConfigMap("default", "event0", nil), fixtures.ConfigMap("default", "event1", nil)}
	var lowErrs []error
	wg.Go(func() { lowErrs = s.CreateBatch(LowPriority(ctx), low) })
	waitUntil(t, "the low-priority batch queued in its lane", func() bool { return len(s.later) == 1 })
	batches := make([][]api.Object, 2)
	batchErrs := make([][]error, len(batches))
	for b := range batches {
		batches[b] = []api.Object{fixtures.ConfigMap("default", fmt.Sprint("batch", b, "a"), nil), fixtures.ConfigMap("default", fmt.Sprint("batch", b, "b"), nil)}
		wg.Go(func() { batchErrs[b] = s.CreateBatch(ctx, batches[b]) })
		waitUntil(t, fmt.Sprint("batch ", b, " queued"), func() bool { return len(s.batches) == b+1 })
	}
	release()
	wg.Wait()

	rev := func(o api.Object) int64 { return revisionOf(t, o) }
	batchRevs := make([][2]int64, len(batches)) // lowest, highest
	for b := range batches {
		batchRevs[b] = [2]int64{1 << 62, 0}
		for i, err := range batchErrs[b] {
			if err != nil {
				t.Fatalf("CreateBatch %d [%d] = %v", b, i, err)
			}
			r := rev(batches[b][i])
			batchRevs[b] = [2]int64{min(batchRevs[b][0], r), max(batchRevs[b][1], r)}
		}
	}
	lastSingle := int64(0)
	for _, o := range singles {
		lastSingle = max(lastSingle, rev(o))
	}
	for i, err := range lowErrs {
		if err != nil {
			t.Fatalf("CreateBatch(LowPriority) [%d] = %v", i, err)
		}
		if r := rev(low[i]); r < lastSingle || r < batchRevs[1][1] {
			t.Errorf("the low-priority batch's %d has revision %d; the single writes go up to %d, the batches queued after it to %d: want it after both", i, r, lastSingle, batchRevs[1][1])
		}
	}
	for i, err := range singleErrs {
		if err != nil {
			t.Fatalf("Create(single%d) = %v", i, err)
		}
		if r := rev(singles[i]); r < batchRevs[0][1] || r > batchRevs[1][0] {
			t.Errorf("single%d has revision %d; the first batch %v, the second %v: want it between them (the first batch before the queued singles, the singles before the next batch)",
				i, r, batchRevs[0], batchRevs[1])
		}
	}
}

// TestLowPriorityWaitsForAnIdleWriter: a LowPriority batch queued while
// the writer is busy waits behind the writes queued after it, but not
// longer than laterMaxWait by the store's clock: once it has waited
// that long it goes before the writes queued since.
func TestLowPriorityWaitsForAnIdleWriter(t *testing.T) {
	ctx := context.Background()
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rev := func(o api.Object) int64 { return revisionOf(t, o) }
	// round holds the writer, queues a low-priority batch, steps the
	// clock by wait, queues a single write, releases the writer and
	// returns both revisions.
	round := func(name string, wait time.Duration) (low, single int64) {
		var wg sync.WaitGroup
		release := holdWriter(ctx, s, &wg)
		ev := fixtures.ConfigMap("default", name+"-event", nil)
		var lowErrs []error
		wg.Go(func() { lowErrs = s.CreateBatch(LowPriority(ctx), []api.Object{ev}) })
		waitUntil(t, "the low-priority batch queued", func() bool { return len(s.later) == 1 })
		fake.Advance(wait)
		one := fixtures.ConfigMap("default", name+"-single", nil)
		var oneErr error
		wg.Go(func() { oneErr = s.Create(ctx, one) })
		waitUntil(t, "the single write queued", func() bool { return len(s.ops) == 1 })
		release()
		wg.Wait()
		if lowErrs[0] != nil || oneErr != nil {
			t.Fatalf("%s: CreateBatch(LowPriority) = %v, Create = %v", name, lowErrs[0], oneErr)
		}
		return rev(ev), rev(one)
	}
	if low, single := round("fresh", laterMaxWait-time.Second); low < single {
		t.Errorf("a low-priority batch that waited %v has revision %d, the single write queued after it %d: want it after", laterMaxWait-time.Second, low, single)
	}
	if low, single := round("aged", laterMaxWait); low > single {
		t.Errorf("a low-priority batch that waited %v has revision %d, the single write queued after it %d: want it first", laterMaxWait, low, single)
	}
}

// TestLowPriorityYieldsBetweenTransactions: a LowPriority batch larger
// than MaxBatch is a writer task per transaction, so even once it has
// waited laterMaxWait it takes one turn at a time: a write queued behind
// it goes between its transactions rather than after all of them.
func TestLowPriorityYieldsBetweenTransactions(t *testing.T) {
	ctx := context.Background()
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1, Clock: fake, MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	release := holdWriter(ctx, s, &wg)
	low := []api.Object{fixtures.ConfigMap("default", "event0", nil), fixtures.ConfigMap("default", "event1", nil), fixtures.ConfigMap("default", "event2", nil)}
	var lowErrs []error
	wg.Go(func() { lowErrs = s.CreateBatch(LowPriority(ctx), low) })
	waitUntil(t, "the low-priority batch queued, a task a transaction", func() bool { return len(s.later) == 2 })
	fake.Advance(laterMaxWait)
	one := fixtures.ConfigMap("default", "single", nil)
	var oneErr error
	wg.Go(func() { oneErr = s.Create(ctx, one) })
	waitUntil(t, "the single write queued", func() bool { return len(s.ops) == 1 })
	release()
	wg.Wait()
	if oneErr != nil {
		t.Fatal(oneErr)
	}
	var revs []int64
	for i, o := range low {
		if lowErrs[i] != nil {
			t.Fatalf("CreateBatch(LowPriority) [%d] = %v", i, lowErrs[i])
		}
		revs = append(revs, revisionOf(t, o))
	}
	single := revisionOf(t, one)
	if !(revs[0] < single && revs[1] < single && single < revs[2]) {
		t.Errorf("the low-priority batch's revisions %v (transactions of 2), the single write's %d: want the single write between the two transactions", revs, single)
	}
}

// holdWriter makes s's writer run a task that blocks until release is
// called, so that writes queue behind it in a known order.
func holdWriter(ctx context.Context, s *Store, wg *sync.WaitGroup) (release func()) {
	held, hold := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		_ = s.submit(ctx, &op{kind: opTask, task: func(context.Context, *writer) error {
			close(held)
			<-hold
			return nil
		}})
	})
	<-held
	return func() { close(hold) }
}

// revisionOf is o's resourceVersion as a revision.
func revisionOf(t *testing.T, o api.Object) int64 {
	t.Helper()
	r, err := parseRevision(o.GetObjectMeta().ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitUntil polls cond (a queue's length: state another goroutine is
// about to reach, not a timing) for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
	}
}
