package controllers

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// TestAddAtUsesTheGivenTime: a delayed add asks for an absolute time, so
// a clock stepped between a reconcile's read of now and its requeue does
// not push the next look later by that step.
func TestAddAtUsesTheGivenTime(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC))
	q := NewQueue(clk)
	due := clk.Now().Add(time.Hour)
	clk.Advance(50 * time.Minute) // the reconcile took "50 minutes"
	q.AddAt("k", due)
	clk.Advance(10 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if key, ok := q.Get(ctx); !ok || key != "k" {
		t.Fatalf("Get after the due time = %q, %v; want k, true", key, ok)
	}
	q.Done("k")
	q.AddAt("past", clk.Now().Add(-time.Minute))
	if key, ok := q.Get(ctx); !ok || key != "past" {
		t.Fatalf("Get of a key due in the past = %q, %v; want past, true", key, ok)
	}
}

// recordingRecorder keeps the objects events were recorded about.
type recordingRecorder struct{ objs []api.Object }

func (r *recordingRecorder) Eventf(_ context.Context, obj api.Object, _, _, _ string, _ ...any) {
	r.objs = append(r.objs, obj)
}

// TestEventfCopiesEveryKind: eventf records about a copy, for any kind
// (it once dropped the events of kinds its type switch did not list).
func TestEventfCopiesEveryKind(t *testing.T) {
	for _, r := range api.Resources() {
		rec := &recordingRecorder{}
		obj := r.New()
		obj.GetObjectMeta().Name = "x"
		eventf(context.Background(), rec, obj, api.EventTypeNormal, "Test", "m")
		if len(rec.objs) != 1 {
			t.Errorf("eventf(%s) recorded %d events; want 1", r.Kind, len(rec.objs))
			continue
		}
		if rec.objs[0] == obj || rec.objs[0].GetObjectMeta().Name != "x" {
			t.Errorf("eventf(%s) recorded %p (name %q); want a copy of %p named x", r.Kind, rec.objs[0], rec.objs[0].GetObjectMeta().Name, obj)
		}
	}
	eventf(context.Background(), &recordingRecorder{}, (*api.Pod)(nil), api.EventTypeNormal, "Test", "m") // no panic
}

// TestQueueDelayedKeys: delayed keys come out when due and not before, in
// any number; an earlier AddAt of a waiting key wins and a later one does
// not; Add queues a waiting key at once and cancels its delay;
// NextDelayed follows the earliest live delay.
func TestQueueDelayedKeys(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	q := NewQueue(clk)
	const n = 1000
	// Key i is due at start + ((i*7919)%n + 1) seconds: every second once.
	for i := range n {
		q.AddAt(fmt.Sprint("k", i), start.Add(time.Duration((i*7919)%n+1)*time.Second))
	}
	q.AddAt("k0", start.Add(time.Hour))            // later: ignored
	q.AddAt("k1", start.Add(500*time.Millisecond)) // earlier: wins
	q.Add("k2")                                    // now: delay cancelled
	if next, ok := q.NextDelayed(); !ok || !next.Equal(start.Add(500*time.Millisecond)) {
		t.Fatalf("NextDelayed = %v, %v; want %v", next, ok, start.Add(500*time.Millisecond))
	}
	got := func() []string {
		var keys []string
		for {
			k, ok := q.TryGet()
			if !ok {
				return keys
			}
			q.Done(k)
			keys = append(keys, k)
		}
	}
	if keys := got(); len(keys) != 1 || keys[0] != "k2" {
		t.Fatalf("at start got %v; want [k2]", keys)
	}
	clk.Advance(500 * time.Millisecond)
	if keys := got(); len(keys) != 1 || keys[0] != "k1" {
		t.Fatalf("at +0.5s got %v; want [k1]", keys)
	}
	seen := map[string]bool{"k1": true, "k2": true}
	for s := 1; s <= n; s++ {
		clk.Advance(start.Add(time.Duration(s)*time.Second - time.Nanosecond).Sub(clk.Now()))
		before := got()
		clk.Advance(time.Nanosecond)
		keys := got()
		var want []string
		for i := range n {
			if k := fmt.Sprint("k", i); (i*7919)%n+1 == s && !seen[k] {
				want = append(want, k)
			}
		}
		if len(before) != 0 || !slices.Equal(keys, want) {
			t.Fatalf("second %d: got %v just before and %v at it; want none and %v", s, before, keys, want)
		}
		for _, k := range keys {
			seen[k] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("%d of %d keys came out", len(seen), n)
	}
	if next, ok := q.NextDelayed(); ok {
		t.Fatalf("NextDelayed after all = %v; want none", next)
	}
	if l := len(q.due.h); l > 64 {
		t.Errorf("%d heap entries left with nothing delayed", l)
	}
}

// TestQueueAddWithoutWaitersAllocatesNothing: with no Get waiting, adding
// a queued key again makes no wake channel; a Get that then waits is
// still woken by the next add.
func TestQueueAddWithoutWaitersAllocatesNothing(t *testing.T) {
	q := NewQueue(nil)
	q.Add("a")
	if n := testing.AllocsPerRun(100, func() { q.Add("a") }); n != 0 {
		t.Errorf("Add of a queued key allocates %v times; want 0", n)
	}
	if k, ok := q.Get(context.Background()); !ok || k != "a" {
		t.Fatalf("Get = %q, %v; want a", k, ok)
	}
	q.Done("a")
	got := make(chan string)
	go func() {
		k, _ := q.Get(context.Background())
		got <- k
	}()
	for deadline := time.Now().Add(10 * time.Second); ; { // until the Get waits
		q.mu.Lock()
		armed := q.armed
		q.mu.Unlock()
		if armed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Get never waited")
		}
		runtime.Gosched()
	}
	q.Add("b")
	select {
	case k := <-got:
		if k != "b" {
			t.Fatalf("Get = %q; want b", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting Get was not woken by Add")
	}
}
