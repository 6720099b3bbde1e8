package events

import (
	"context"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// TestEventsBatch: new events are created with one commit; a repeat in
// the same batch, and a repeat of an event stored before, fold into the
// stored event; two events about one object at one (fake) instant both
// stored; an invalid event is dropped alone.
func TestEventsBatch(t *testing.T) {
	s, st, _ := newSink(t)
	ctx := context.Background()
	rec := s.NewRecorder("default-scheduler", "")
	rec.Eventf(ctx, pod("old"), api.EventTypeWarning, "FailedScheduling", "0/3 nodes are available")

	var evs []Event
	for i := range 100 {
		evs = append(evs, Event{Object: pod(fmt.Sprint("p", i)), Type: api.EventTypeNormal, Reason: "Scheduled", Message: fmt.Sprintf("assigned to n%d", i)})
	}
	evs = append(evs,
		Event{Object: pod("p0"), Type: api.EventTypeNormal, Reason: "Scheduled", Message: "assigned to n0"},                   // repeat within the batch
		Event{Object: pod("old"), Type: api.EventTypeWarning, Reason: "FailedScheduling", Message: "0/3 nodes are available"}, // repeat of a stored one
		Event{Object: pod("p1"), Type: api.EventTypeWarning, Reason: "Preempted", Message: "by p2"},                           // same object, same instant
		Event{Object: pod("p2"), Type: "Sideways", Reason: "Scheduled", Message: "invalid type"},
	)
	commits := st.Stats().Commits
	rec.Events(ctx, evs)
	if got := st.Stats().Commits - commits; got != 3 {
		t.Errorf("%d commits for a batch of %d events; want 3: the new ones in one, and one a repeat", got, len(evs))
	}
	stored := listEvents(t, st)
	counts := make(map[string]int32)
	for _, e := range stored {
		counts[e.InvolvedObject.Name+"/"+e.Reason] += e.Count
		if e.Type == "Sideways" {
			t.Errorf("invalid event stored: %+v", e)
		}
	}
	if len(stored) != 102 {
		t.Errorf("stored %d events; want 102 (100 Scheduled, one Preempted, the old one)", len(stored))
	}
	for k, want := range map[string]int32{"p0/Scheduled": 2, "p1/Scheduled": 1, "p1/Preempted": 1, "old/FailedScheduling": 2, "p99/Scheduled": 1} {
		if counts[k] != want {
			t.Errorf("count of %s = %d; want %d", k, counts[k], want)
		}
	}
}
