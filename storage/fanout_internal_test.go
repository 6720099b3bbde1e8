package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api/fields"
)

// TestNodeWatchesIndexed: watches selecting one spec.nodeName are kept by
// node, not among the watchers every change is matched against, and a
// write reaches only the matching watcher's queue.
func TestNodeWatchesIndexed(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: t.TempDir() + "/db"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ws []*Watcher
	for i := range 50 {
		fs, err := fields.Parse(fmt.Sprintf("spec.nodeName=n%d", i))
		if err != nil {
			t.Fatal(err)
		}
		w, err := s.Watch(ctx, "pods", WatchOptions{FromNow: true, Fields: fs})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	s.bc.mu.Lock()
	plain, indexed, nodes := len(s.bc.watchers["pods"]), s.bc.indexed.n, len(s.bc.indexed.by["pods"])
	s.bc.mu.Unlock()
	if plain != 0 || indexed != 50 || nodes != 50 {
		t.Fatalf("%d plain and %d indexed watchers over %d nodes; want 0, 50, 50", plain, indexed, nodes)
	}
	ws[7].Stop()
	s.bc.mu.Lock()
	indexed, nodes = s.bc.indexed.n, len(s.bc.indexed.by["pods"])
	s.bc.mu.Unlock()
	if indexed != 49 || nodes != 49 {
		t.Fatalf("after Stop: %d indexed watchers over %d nodes; want 49, 49", indexed, nodes)
	}
}

// TestWatchIndexKnowsUnchangedValues: once a resource is tracked, a value
// is unchanged since a revision when no change had it before or after;
// nothing is known of revisions before tracking began or of values
// pruned above the revision asked; a change whose fields did not decode
// forgets everything before it.
func TestWatchIndexKnowsUnchangedValues(t *testing.T) {
	defer func(n int) { maxTrackedSlack = n }(maxTrackedSlack)
	maxTrackedSlack = 4
	var ix watchIndex
	pod := func(rev int64) *change { return &change{rev: rev, key: key{resource: "pods"}} }
	ix.note(pod(5), "n1", "n1", 1) // not tracked yet: nothing noted
	if ix.unchangedSince("pods", "n1", 4) {
		t.Fatal("an untracked resource's value reported unchanged")
	}
	ix.track("pods", 10)
	ix.note(pod(11), "n2", "", 1)
	ix.note(pod(12), "n1", "n3", 1) // moved from n3 to n1
	for _, tc := range []struct {
		value string
		from  int64
		want  bool
	}{
		{"n1", 9, false},  // before tracking began
		{"n1", 11, false}, // changed at 12
		{"n1", 12, true},
		{"n3", 11, false}, // moved away at 12
		{"n2", 10, false},
		{"n2", 11, true},
		{"", 10, false},  // unbound before 11
		{"n9", 10, true}, // never changed since tracking began
		{"n9", 9, false},
	} {
		if got := ix.unchangedSince("pods", tc.value, tc.from); got != tc.want {
			t.Errorf("unchangedSince(%q, %d) = %v; want %v", tc.value, tc.from, got, tc.want)
		}
	}
	// Past the slack the values last changed before the ring's oldest,
	// unwatched, are pruned; an absent value is then known unchanged only
	// after the newest pruned. (The first check, at 4 values, found none
	// older than the ring: the next is at 8.)
	for i, v := range []string{"n4", "n5", "n6", "n7"} {
		ix.note(pod(int64(13+i)), v, v, 13)
	}
	tr := ix.tracked["pods"]
	if len(tr.last) != 4 || tr.floor != 12 || tr.last["n4"] != 13 {
		t.Fatalf("after pruning: %v, floor %d; want n4-n7 kept, floor 12", tr.last, tr.floor)
	}
	if ix.unchangedSince("pods", "n1", 11) || !ix.unchangedSince("pods", "n1", 12) || !ix.unchangedSince("pods", "n4", 13) {
		t.Error("pruned values answered wrong")
	}
	ix.forget("pods", 20)
	if ix.unchangedSince("pods", "n9", 19) || !ix.unchangedSince("pods", "n9", 20) {
		t.Error("values before an undecodable change reported known")
	}
}
