package controllers

import (
	"context"
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
