package controllers

import (
	"errors"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/uid"
)

// TestCreateAllSlowStart: pods go to the store in batches of 1, 2, 4, …,
// one commit a batch; a failing build stops the creates after its batch
// (the rest of that batch is still created); each created pod is in the
// informer.
func TestCreateAllSlowStart(t *testing.T) {
	h := newHarness(t)
	var told []int // Config.Bulk's calls, with the pods stored at each
	w := podWriter{store: h.store, pods: h.m.informers.Pods, bulk: func(n int) { told = append(told, n, len(h.pods())) }}
	var built []int
	boom := errors.New("boom")
	commits := h.store.Stats().Commits
	made, err := w.createAll(h.ctx, 40, func(i int) (*api.Pod, error) {
		if len(told) == 0 {
			t.Fatalf("pod %d built before Config.Bulk heard of the creates", i)
		}
		built = append(built, i)
		if i == 9 {
			return nil, boom
		}
		p := barePod(fmt.Sprintf("p%02d-xxxxx", i), "")
		p.UID = uid.New()
		return p, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("createAll err = %v; want boom", err)
	}
	// Batches [0] [1 2] [3..6] [7..14]: the fourth holds the failure.
	if len(built) != 15 {
		t.Errorf("built %d pods; want 15 (stop after the failing batch of 1, 2, 4, 8)", len(built))
	}
	if got := h.store.Stats().Commits - commits; got != 4 {
		t.Errorf("commits = %d; want 4, one per batch", got)
	}
	for i, p := range made {
		if want := i < 15 && i != 9; (p != nil) != want {
			t.Errorf("made[%d] = %v; want created: %v", i, p, want)
		}
		if p != nil && h.m.informers.Pods.Get("default/"+p.Name) == nil {
			t.Errorf("pod %s was created but is not in the informer", p.Name)
		}
	}
	if n := len(h.pods()); n != 14 {
		t.Errorf("%d pods stored; want 14", n)
	}
	if len(told) != 2 || told[0] != 40 || told[1] != 0 {
		t.Errorf("Config.Bulk heard (n, pods stored then) %v; want once, of 40, before any pod: [40 0]", told)
	}
}

// TestCreateAllRenamesTakenNames: a name already taken is retried with
// another random suffix, so every pod is created.
func TestCreateAllRenamesTakenNames(t *testing.T) {
	h := newHarness(t)
	made, err := podWriter{store: h.store, pods: h.m.informers.Pods}.createAll(h.ctx, 8, func(int) (*api.Pod, error) {
		p := barePod("web-aaaaa", "")
		p.UID = uid.New()
		return p, nil
	})
	if err != nil {
		t.Fatalf("createAll = %v", err)
	}
	names := map[string]bool{}
	for _, p := range made {
		if p == nil {
			t.Fatal("a pod was not created")
		}
		names[p.Name] = true
	}
	if len(names) != 8 || !names["web-aaaaa"] || len(h.pods()) != 8 {
		t.Errorf("names %v, %d stored; want 8 distinct, web-aaaaa among them", names, len(h.pods()))
	}
}
