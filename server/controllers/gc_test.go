package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func TestGCDeletesDependentsOfDeletedOwners(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	d := h.create(deployment("web", 3, "nginx:1")).(*api.Deployment)
	ds := h.create(daemonSet("agent", "fluent-bit:1", nil)).(*api.DaemonSet)
	h.settle()
	h.cycle(nodes3...)
	if a, b := h.statsOf(d.UID), h.statsOf(ds.UID); a.active != 3 || b.active != 3 {
		t.Fatalf("setup: %d deployment pods, %d daemon pods; want 3 and 3", a.active, b.active)
	}
	rss := h.replicaSets("web")
	if len(rss) != 1 {
		t.Fatalf("setup: %d replica sets; want 1", len(rss))
	}
	h.remove("deployments", "default", "web")
	h.settle()
	if n := len(h.replicaSets("web")); n != 0 {
		t.Fatalf("after deleting the deployment: %d replica sets; want 0", n)
	}
	if s := h.statsOf(rss[0].UID); s.active != 0 || s.terminating != 3 {
		t.Fatalf("after deleting the deployment: %d active, %d terminating; want 0 and 3", s.active, s.terminating)
	}
	h.remove("daemonsets", "default", "agent")
	h.settle()
	h.run(nodes3...) // agents confirm
	h.settle()
	if n := len(h.pods()); n != 0 {
		t.Fatalf("%d pods left after deleting both owners; want 0", n)
	}

	// An orphan: owner reference to a Deployment that does not exist
	// (deleted while the server was down). An unbound one goes at once.
	yes := true
	p := barePod("orphan", "")
	p.OwnerReferences = []api.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "gone", UID: "00000000-0000-4000-8000-000000000000", Controller: &yes}}
	h.create(p)
	// A recreated owner of the same name does not adopt the old pods.
	d2 := h.create(deployment("gone", 0, "nginx:1")).(*api.Deployment)
	_ = d2
	h.settle()
	if n := len(h.pods()); n != 0 {
		t.Fatalf("orphan pod left: %d pods", n)
	}
}

func TestGCPodsOfDeletedNodes(t *testing.T) {
	h := newHarness(t)
	h.addNodes("n1", "gone")
	h.create(barePod("a", "gone"))
	h.create(barePod("b", "n1"))
	h.settle()
	h.remove("nodes", "", "gone")
	h.settle()
	if n := len(h.pods()); n != 2 {
		t.Fatalf("%d pods right after the node was deleted; want 2 (quarantine)", n)
	}
	h.advance(DefaultOrphanNodeQuarantine + time.Second)
	ps := h.pods()
	if len(ps) != 1 || ps[0].Name != "b" {
		t.Fatalf("pods after the quarantine = %d; want only b", len(ps))
	}
}

func TestGCTerminatedThresholdAndSweeps(t *testing.T) {
	swept := 0
	h := newHarness(t, func(c *Config) {
		c.TerminatedPodThreshold = 3
		c.Sweeps = []Sweep{{Name: "tokens", Run: func(context.Context) (int, error) { swept++; return 1, nil }}}
	})
	h.addNodes("n1")
	for i := range 6 {
		p := barePod(fmt.Sprintf("job-%d", i), "n1")
		p.CreationTimestamp = api.NewTime(epoch.Add(time.Duration(i) * time.Minute))
		p.Status.Phase = api.PodSucceeded
		h.create(p)
	}
	h.create(barePod("running", "n1"))
	h.settle()
	if err := h.m.GC.Sweep(h.ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range h.pods() {
		names = append(names, p.Name)
	}
	if fmt.Sprint(names) != "[job-3 job-4 job-5 running]" {
		t.Errorf("pods after the sweep = %v; want the 3 newest finished and the running one", names)
	}
	if swept != 1 {
		t.Errorf("sweep ran %d times; want 1", swept)
	}
}

func TestQueue(t *testing.T) {
	h := newHarness(t)
	q := NewQueue(h.clk)
	q.Add("a")
	q.Add("b")
	q.Add("a")
	if q.Len() != 2 {
		t.Fatalf("Len() = %d after adding a, b, a; want 2", q.Len())
	}
	k, _ := q.TryGet()
	if k != "a" {
		t.Fatalf("TryGet() = %q; want a", k)
	}
	q.Add("a") // while processing: queued again on Done
	if k2, _ := q.TryGet(); k2 != "b" {
		t.Fatalf("TryGet() = %q; want b (a is being processed)", k2)
	}
	if _, ok := q.TryGet(); ok {
		t.Fatal("TryGet() handed out a key being processed")
	}
	q.Done("a")
	q.Done("b")
	if k, _ := q.TryGet(); k != "a" {
		t.Fatalf("TryGet() = %q after Done; want a again", k)
	}
	q.Done("a")
	q.AddAfter("later", time.Second)
	if _, ok := q.TryGet(); ok {
		t.Fatal("a delayed key was ready at once")
	}
	h.clk.Advance(time.Second)
	if k, _ := q.TryGet(); k != "later" {
		t.Fatalf("TryGet() = %q after the delay; want later", k)
	}
	q.Done("later")
	q.AddRateLimited("x")
	q.AddRateLimited("x")
	if at, ok := q.NextDelayed(); !ok || at.Sub(h.clk.Now()) != baseRetryDelay {
		t.Fatalf("NextDelayed() = %v; want now+%v (the earlier delay wins)", at.Sub(h.clk.Now()), baseRetryDelay)
	}
	// Get blocks until the fake clock reaches the delay.
	got := make(chan string, 1)
	go func() {
		k, _ := q.Get(context.Background())
		got <- k
	}()
	h.clk.BlockUntil(1)
	h.clk.Advance(baseRetryDelay)
	select {
	case k := <-got:
		if k != "x" {
			t.Fatalf("Get() = %q; want x", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Get() did not return once the delay passed")
	}
}

func TestInformerKeepsNewerWrites(t *testing.T) {
	h := newHarness(t)
	inf := h.m.informers.Pods
	p := h.create(barePod("p", "n1")).(*api.Pod)
	h.settle()
	// A controller's write (revision r+10) is assumed; the watch then
	// delivers an older state: it must not win.
	newer := *p
	newer.ResourceVersion = fmt.Sprint(revisionOf(p) + 10)
	newer.Status.Phase = api.PodRunning
	inf.Assume(&newer)
	older := *p
	inf.put(&older, revisionOf(p)+1)
	if got := inf.Get("default/p").(*api.Pod); got.Status.Phase != api.PodRunning {
		t.Fatalf("phase = %s; want the newer write's Running", got.Status.Phase)
	}
	// A deletion by a controller is not undone by an older event.
	inf.AssumeDeleted(&newer, revisionOf(p)+20)
	inf.put(&older, revisionOf(p)+15)
	if inf.Get("default/p") != nil {
		t.Fatal("an older event resurrected a deleted object")
	}
	if len(inf.ByIndex(indexByNode, "n1")) != 0 {
		t.Fatal("the node index still holds the deleted pod")
	}
}
