package events

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

func newSink(t *testing.T) (*Sink, *storage.Store, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	st, err := storage.Open(context.Background(), storage.Options{
		Path: filepath.Join(t.TempDir(), "state.db"), Clock: fc, CompactInterval: -1, CheckpointInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return NewSink(st, fc, 0, nil), st, fc
}

func pod(name string) *api.Pod {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name}}
	api.SetTypeMeta(p)
	return p
}

func listEvents(t *testing.T, st *storage.Store) []*api.Event {
	t.Helper()
	objs, _, err := st.List(context.Background(), "events", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*api.Event, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Event)
	}
	return out
}

func TestRepeatsAreCountedNotStored(t *testing.T) {
	s, st, fc := newSink(t)
	ctx := context.Background()
	rec := s.NewRecorder("skiff-scheduler", "")
	start := fc.Now()
	for range 5 {
		rec.Eventf(ctx, pod("web"), api.EventTypeWarning, "FailedScheduling", "0/%d nodes are available", 3)
		fc.Advance(time.Second)
	}
	rec.Eventf(ctx, pod("web"), api.EventTypeNormal, "Scheduled", "assigned to n1")
	rec.Eventf(ctx, pod("db"), api.EventTypeWarning, "FailedScheduling", "0/3 nodes are available")
	evs := listEvents(t, st)
	if len(evs) != 3 {
		t.Fatalf("stored %d events; want 3 (5 repeats folded into one)", len(evs))
	}
	var folded *api.Event
	for _, e := range evs {
		if e.InvolvedObject.Name == "web" && e.Reason == "FailedScheduling" {
			folded = e
		}
	}
	if folded == nil {
		t.Fatal("the repeated event is missing")
	}
	if folded.Count != 5 || !folded.FirstTimestamp.Equal(start) || !folded.LastTimestamp.Equal(start.Add(4*time.Second)) {
		t.Fatalf("folded event count=%d first=%v last=%v; want 5, %v, %v", folded.Count, folded.FirstTimestamp, folded.LastTimestamp, start, start.Add(4*time.Second))
	}
	if folded.Source.Component != "skiff-scheduler" || folded.InvolvedObject.Kind != "Pod" || folded.InvolvedObject.UID != "uid-web" {
		t.Fatalf("event fields: %+v", folded)
	}
}

func TestEventsExpireAnHourAfterLastSeen(t *testing.T) {
	s, st, fc := newSink(t)
	ctx := context.Background()
	rec := s.NewRecorder("test", "")
	rec.Eventf(ctx, pod("old"), api.EventTypeNormal, "Pulled", "image pulled")
	fc.Advance(40 * time.Minute)
	rec.Eventf(ctx, pod("young"), api.EventTypeNormal, "Pulled", "image pulled")
	fc.Advance(21 * time.Minute)
	n, err := s.Expire(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Expire = %d, %v; want 1 deleted", n, err)
	}
	evs := listEvents(t, st)
	if len(evs) != 1 || evs[0].InvolvedObject.Name != "young" {
		t.Fatalf("left %d events (%v); want only the young one", len(evs), evs)
	}
	// A repeat of an expired event starts a new one with count 1.
	fc.Advance(time.Hour)
	if _, err := s.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	rec.Eventf(ctx, pod("young"), api.EventTypeNormal, "Pulled", "image pulled")
	evs = listEvents(t, st)
	if len(evs) != 1 || evs[0].Count != 1 {
		t.Fatalf("after expiry a repeat gave %d events, count %d; want 1 new event with count 1", len(evs), evs[0].Count)
	}
}

func TestRunExpiresOnTicks(t *testing.T) {
	s, st, fc := newSink(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.NewRecorder("test", "").Eventf(ctx, pod("p"), api.EventTypeNormal, "Started", "started")
	done := make(chan struct{})
	go func() { s.Run(ctx, time.Minute); close(done) }()
	fc.BlockUntil(1)
	fc.Advance(61 * time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for len(listEvents(t, st)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("Run did not expire the event after the TTL")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

func TestKeyIndexIsBounded(t *testing.T) {
	s, _, fc := newSink(t)
	for i := range maxKeys + 10 {
		ev := &api.Event{
			ObjectMeta:     api.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: "default", UID: "u"},
			InvolvedObject: api.ObjectReference{Kind: "Pod", Name: fmt.Sprintf("p%d", i), Namespace: "default"},
			Reason:         "R",
		}
		api.SetTypeMeta(ev)
		s.remember(keyOf(ev), entry{namespace: "default", name: ev.Name, lastSeen: fc.Now()})
	}
	if len(s.keys) > maxKeys {
		t.Fatalf("index holds %d keys; bound is %d", len(s.keys), maxKeys)
	}
}
