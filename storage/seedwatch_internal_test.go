package storage

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// TestSeedWatchIndexWindowAndUnreadable: the history read at Open goes
// back at most seedWindow revisions (a watch from before them is not
// known to be quiet), and a change whose field set cannot be read ends
// what is known before it, as one published live does.
func TestSeedWatchIndexWindowAndUnreadable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	opts := Options{Path: path, WatchCacheSize: 4, CompactInterval: -1}
	s, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 { // revisions 1..12, n1 then n2 then n3...
		p := fixtures.Pod("default", fmt.Sprint("p", i), nil)
		p.Spec.NodeName = fmt.Sprint("n", i%4)
		if err := s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(ctx, fixtures.ConfigMap("default", "cm", nil)); err != nil { // 13
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	reopen := func(window int64) *Store {
		t.Helper()
		defer func(w int64) { seedWindow = w }(seedWindow)
		seedWindow = window
		s, err := Open(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s = reopen(6) // reads revisions 8..13
	if s.bc.known != 7 {
		t.Errorf("known after a 6-revision seed at 13 = %d; want 7", s.bc.known)
	}
	pods := s.bc.indexed.tracked["pods"]
	if pods == nil || pods.since != 7 {
		t.Fatalf("pods tracked = %+v; want since 7", pods)
	}
	// p7 (rev 8) is on n3, p8..p11 (9..12) on n0..n3.
	for v, want := range map[string]int64{"n0": 9, "n1": 10, "n2": 11, "n3": 12} {
		if got := pods.last[v]; got != want {
			t.Errorf("pods' last change on %s = %d; want %d", v, got, want)
		}
	}
	if got := s.ResourceRevision("configmaps"); got != 13 {
		t.Errorf("ResourceRevision(configmaps) = %d; want 13", got)
	}
	if got := s.ResourceRevision("pods"); got != 12 {
		t.Errorf("ResourceRevision(pods) = %d; want 12", got)
	}
	if _, ok := s.bc.indexed.tracked["configmaps"]; ok {
		t.Error("configmaps, whose objects have no spec.nodeName, are tracked by value")
	}
	s.bc.mu.Lock()
	quiet := s.bc.indexed.unchangedSince("pods", "n0", 9)
	before := s.bc.indexed.unchangedSince("pods", "n9", 6)
	s.bc.mu.Unlock()
	if !quiet || before {
		t.Errorf("unchangedSince(n0, 9) = %v, (n9, 6) = %v; want true (within the seed), false (before it)", quiet, before)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Revision 10's field set is unreadable: nothing before it is known.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE changes SET fields = CAST('{"spec.nodeName":' AS BLOB) WHERE rev = 10`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = reopen(100)
	pods = s.bc.indexed.tracked["pods"]
	if pods == nil || pods.since != 10 || pods.floor != 10 {
		t.Fatalf("pods tracked after an unreadable change at 10 = %+v; want since and floor 10", pods)
	}
	if _, ok := pods.last["n0"]; ok || pods.last["n2"] != 11 {
		t.Errorf("pods' values after an unreadable change at 10 = %v; want n2 at 11 and nothing from before 10", pods.last)
	}
	if s.bc.known != 0 {
		t.Errorf("known after seeding the whole log = %d; want 0", s.bc.known)
	}
}
