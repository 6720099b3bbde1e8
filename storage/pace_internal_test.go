package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

func TestPacerYieldsAfterItsRun(t *testing.T) {
	var cur time.Time
	var sleeps []time.Duration
	waiting := uint64(3)
	p := &pacer{now: func() time.Time { return cur }, sleep: func(d time.Duration) { sleeps = append(sleeps, d) },
		runnable: func() uint64 { return waiting }}
	p.waited()
	for _, at := range []time.Duration{500 * time.Microsecond, 1900 * time.Microsecond} {
		cur = time.Time{}.Add(at)
		p.step()
	}
	if len(sleeps) != 0 {
		t.Fatalf("yielded %d times within %v of running; want none", len(sleeps), paceRun)
	}
	cur = time.Time{}.Add(paceRun)
	p.step()
	if !slices.Equal(sleeps, []time.Duration{paceSleep}) {
		t.Fatalf("after %v of running: sleeps %v; want one of %v", paceRun, sleeps, paceSleep)
	}
	// The yield began a new run.
	cur = cur.Add(paceRun - time.Microsecond)
	p.step()
	if len(sleeps) != 1 {
		t.Fatalf("yielded again %v after the last yield", paceRun-time.Microsecond)
	}
	// So does a wait for work.
	cur = cur.Add(time.Hour)
	p.waited()
	cur = cur.Add(time.Millisecond)
	p.step()
	if len(sleeps) != 1 {
		t.Fatalf("yielded 1 ms after a wait for work")
	}
	// With no goroutine waiting for a core, it runs on.
	waiting = 0
	cur = cur.Add(paceRun)
	p.step()
	if len(sleeps) != 1 {
		t.Fatalf("yielded with no goroutine waiting for a core")
	}
	waiting = 1
	cur = cur.Add(paceRun - time.Microsecond)
	p.step()
	if len(sleeps) != 1 {
		t.Fatalf("yielded %v after a run was renewed without a yield", paceRun-time.Microsecond)
	}
	if got := runnableGoroutines()(); got > 1<<20 {
		t.Errorf("the runtime's runnable goroutines: %d", got)
	}
}

// The writer steps its pacer between the writes of a transaction, and a
// yield changes no result: a batch of 600 (three transactions) written
// with a clock that runs 1 ms a reading yields many times and commits
// every object at consecutive revisions.
func TestWriterYieldsBetweenWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sleeps := 0
	// Set on the writer's goroutine: the writer reads its pacer there.
	err = s.submit(ctx, &op{kind: opTask, task: func(context.Context, *writer) error {
		tick := time.Now()
		s.w.pace.now = func() time.Time { tick = tick.Add(time.Millisecond); return tick }
		s.w.pace.runnable = func() uint64 { return 1 }
		s.w.pace.sleep = func(d time.Duration) {
			if d != paceSleep {
				t.Errorf("slept %v; want %v", d, paceSleep)
			}
			sleeps++
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	objs := make([]api.Object, 600)
	for i := range objs {
		objs[i] = fixtures.Pod("default", fmt.Sprintf("p%03d", i), nil)
	}
	for i, err := range s.CreateBatch(ctx, objs) {
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
	}
	var got int
	if err := s.submit(ctx, &op{kind: opTask, task: func(context.Context, *writer) error { got = sleeps; return nil }}); err != nil {
		t.Fatal(err)
	}
	if got < 100 {
		t.Errorf("the writer yielded %d times in 600 writes at 1 ms a write; want one every %v", got, paceRun)
	}
	first, _ := parseRevision(objs[0].GetObjectMeta().ResourceVersion)
	for i, o := range objs {
		if rv, _ := parseRevision(o.GetObjectMeta().ResourceVersion); rv != first+int64(i) {
			t.Fatalf("object %d at revision %d; want %d", i, rv, first+int64(i))
		}
	}
	list, _, err := s.List(ctx, "pods", ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(objs) {
		t.Errorf("listed %d pods; want %d", len(list), len(objs))
	}
}
