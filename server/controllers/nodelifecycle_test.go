package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// beatAndAdvance moves time in steps of 5 s, the given nodes heartbeating
// at each step, running the monitor and eviction pass like the server.
func (h *harness) beatAndAdvance(d time.Duration, live ...string) {
	h.t.Helper()
	for step := time.Duration(0); step < d; step += 5 * time.Second {
		h.clk.Advance(5 * time.Second)
		h.beat(live...)
		for _, n := range h.m.informers.Nodes.List() {
			h.m.Nodes.queue.Add(KeyOf(n))
		}
		h.settle()
		if err := h.m.Nodes.Evict(h.ctx); err != nil {
			h.t.Fatal(err)
		}
		h.settle()
	}
}

func nodeCondition(n *api.Node, typ string) *api.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// TestNodeGoesSilent: a node that stops heartbeating becomes Ready=Unknown
// with the unreachable taints and its pods not ready after the grace;
// after the eviction timeout the Deployment's pods there are marked for
// deletion and replaced on live nodes, and a bare pod is marked Failed
// (NodeLost). When it comes back the taints go, and the copies that were
// replaced are stopped by its agent (the deletion is confirmed), leaving
// no duplicates.
func TestNodeGoesSilent(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	d := h.create(deployment("web", 6, "nginx:1")).(*api.Deployment)
	h.settle()
	h.cycle(nodes3...)
	h.create(barePod("lonely", "n3"))
	h.cycle(nodes3...)
	if s := h.statsOf(d.UID); s.byNode["n3"] != 2 || s.ready != 6 {
		t.Fatalf("setup: pods per node %v, %d ready; want 2 on n3, 6 ready", s.byNode, s.ready)
	}

	live := []string{"n1", "n2"}
	h.beatAndAdvance(40*time.Second, live...) // n3 silent for exactly the grace: still fine
	n3 := h.get("nodes", "", "n3").(*api.Node)
	if hasTaint(n3, TaintUnreachable, api.TaintEffectNoExecute) {
		t.Fatal("n3 tainted before the grace period ran out")
	}
	h.beatAndAdvance(5*time.Second, live...)
	n3 = h.get("nodes", "", "n3").(*api.Node)
	if c := nodeCondition(n3, api.NodeReady); c == nil || c.Status != api.ConditionUnknown || c.Reason != ReasonNodeStatusUnknown {
		t.Fatalf("n3 Ready = %+v; want Unknown (%s)", c, ReasonNodeStatusUnknown)
	}
	if !hasTaint(n3, TaintUnreachable, api.TaintEffectNoExecute) || !hasTaint(n3, TaintUnreachable, api.TaintEffectNoSchedule) {
		t.Fatalf("n3 taints = %v; want both unreachable taints", n3.Spec.Taints)
	}
	if s := h.statsOf(d.UID); s.ready != 4 || s.active != 6 {
		t.Fatalf("after n3 went unreachable: %d ready of %d; want 4 of 6 (its pods not ready, not yet evicted)", s.ready, s.active)
	}

	// Before the eviction timeout nothing is evicted.
	h.beatAndAdvance(55*time.Second, live...)
	if s := h.statsOf(d.UID); s.terminating != 0 {
		t.Fatalf("%d pods evicted before the eviction timeout", s.terminating)
	}
	h.beatAndAdvance(5*time.Second, live...)
	s := h.statsOf(d.UID)
	if s.terminating != 2 || s.active != 6 || s.byNode["n3"] != 0 {
		t.Fatalf("after the eviction timeout: %d terminating, %d active, per node %v; want 2, 6, none on n3", s.terminating, s.active, s.byNode)
	}
	lonely := h.get("pods", "default", "lonely").(*api.Pod)
	if lonely.Status.Phase != api.PodFailed || lonely.Status.Reason != ReasonNodeLost || lonely.DeletionTimestamp != nil {
		t.Fatalf("bare pod status %s/%s (deleting: %v); want Failed/NodeLost, not deleted", lonely.Status.Phase, lonely.Status.Reason, lonely.DeletionTimestamp != nil)
	}
	h.cycle(live...)
	if s := h.statsOf(d.UID); s.ready != 6 {
		t.Fatalf("replacements: %d ready, per node %v; want 6 on n1 and n2", s.ready, s.byNode)
	}

	// n3 comes back: taints removed, its agent stops the replaced copies.
	h.beatAndAdvance(5*time.Second, nodes3...)
	n3 = h.get("nodes", "", "n3").(*api.Node)
	if hasTaint(n3, TaintUnreachable, api.TaintEffectNoExecute) {
		t.Errorf("n3 taints after it came back = %v; want none of the unreachable ones", n3.Spec.Taints)
	}
	h.cycle(nodes3...)
	if s := h.statsOf(d.UID); s.active != 6 || s.terminating != 0 {
		t.Errorf("after n3 came back: %d active, %d terminating; want 6 and 0 (no duplicates)", s.active, s.terminating)
	}
	if h.rec.has(ReasonNodeNotReady) != 1 || h.rec.has(ReasonTaintManagerEvicted) != 2 {
		t.Errorf("events: %d NodeNotReady, %d TaintManagerEviction; want 1 and 2", h.rec.has(ReasonNodeNotReady), h.rec.has(ReasonTaintManagerEvicted))
	}
}

// TestNodeStartupGrace: after a (re)start the server has no in-memory
// heartbeats; a node whose stored heartbeat is old gets the grace period
// from the start before it is marked unreachable.
func TestNodeStartupGrace(t *testing.T) {
	h := newHarness(t)
	n := readyNode("old", nil)
	n.Status.Conditions[0].LastHeartbeatTime = api.NewTime(epoch.Add(-time.Hour))
	n.CreationTimestamp = api.NewTime(epoch.Add(-2 * time.Hour))
	h.create(n)
	h.settle()
	if got := h.get("nodes", "", "old").(*api.Node); len(got.Spec.Taints) != 0 {
		t.Fatalf("node tainted at start: %v", got.Spec.Taints)
	}
	h.beatAndAdvance(40 * time.Second)
	if got := h.get("nodes", "", "old").(*api.Node); len(got.Spec.Taints) != 0 {
		t.Fatalf("node tainted within the startup grace: %v", got.Spec.Taints)
	}
	h.beatAndAdvance(5 * time.Second)
	if got := h.get("nodes", "", "old").(*api.Node); !hasTaint(got, TaintUnreachable, api.TaintEffectNoExecute) {
		t.Fatalf("node not tainted after the startup grace: %v", got.Spec.Taints)
	}
}

// TestEvictionRateLimit: with many nodes, evictions go one node per
// 1/EvictionRate; when most nodes go dark at once (a network cut),
// nothing is evicted.
func TestEvictionRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		nodes      int
		dark       int
		after      time.Duration // since the pods became due
		wantEvicts int
	}{
		{"one node dark", 10, 1, 0, 1},
		{"two nodes dark, normal rate: one now", 10, 2, 0, 1},
		{"two nodes dark, normal rate: both after 10s", 10, 2, 10 * time.Second, 2},
		{"six of ten dark: small cluster stops", 10, 6, time.Minute, 0},
		{"every node dark: stops", 4, 4, time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			var all, live []string
			for i := range tc.nodes {
				name := fmt.Sprintf("n%02d", i)
				all = append(all, name)
				if i >= tc.dark {
					live = append(live, name)
				}
			}
			h.addNodes(all...)
			d := h.create(deployment("web", int32(tc.nodes), "nginx:1")).(*api.Deployment)
			h.settle()
			h.cycle(all...)
			// Silence until the pods are due (grace + timeout), then more.
			h.beatAndAdvance(105*time.Second+tc.after, live...)
			evictedNodes := map[string]bool{}
			for _, p := range h.pods() {
				if p.DeletionTimestamp != nil {
					evictedNodes[p.Spec.NodeName] = true
				}
			}
			if len(evictedNodes) != tc.wantEvicts {
				t.Errorf("nodes evicted = %v; want %d", evictedNodes, tc.wantEvicts)
			}
			_ = d
		})
	}
}

func TestEvictionDue(t *testing.T) {
	secs := func(s int64) *int64 { return &s }
	at := epoch
	for _, tc := range []struct {
		name  string
		tols  []api.Toleration
		after time.Duration
		want  bool
	}{
		{"no toleration, before timeout", nil, 59 * time.Second, false},
		{"no toleration, at timeout", nil, 60 * time.Second, true},
		{"tolerated for ever", []api.Toleration{{Key: TaintUnreachable, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoExecute}}, time.Hour, false},
		{"tolerated 10s", []api.Toleration{{Key: TaintUnreachable, Operator: api.TolerationOpExists, TolerationSeconds: secs(10)}}, 10 * time.Second, true},
		{"tolerated 300s", []api.Toleration{{Operator: api.TolerationOpExists, TolerationSeconds: secs(300)}}, 100 * time.Second, false},
		{"other taint tolerated", []api.Toleration{{Key: "x", Operator: api.TolerationOpExists}}, 60 * time.Second, true},
	} {
		p := barePod("p", "n")
		p.Spec.Tolerations = tc.tols
		if got, _ := evictionDue(p, at, 60*time.Second, at.Add(tc.after)); got != tc.want {
			t.Errorf("evictionDue(%s) = %v; want %v", tc.name, got, tc.want)
		}
	}
}

func TestEvictionRateStates(t *testing.T) {
	cfg := Config{}.withDefaults()
	for _, tc := range []struct {
		total, unhealthy int
		want             disruption
		rate             float64
	}{
		{0, 0, disruptionNormal, DefaultEvictionRate},
		{10, 5, disruptionNormal, DefaultEvictionRate},
		{10, 6, disruptionPartial, 0},
		{100, 60, disruptionPartial, DefaultSecondaryEvictionRate},
		{3, 3, disruptionFull, 0},
	} {
		st, r := evictionRate(tc.total, tc.unhealthy, cfg)
		if st != tc.want || r != tc.rate {
			t.Errorf("evictionRate(%d, %d) = %s, %v; want %s, %v", tc.total, tc.unhealthy, st, r, tc.want, tc.rate)
		}
	}
}

// TestNodeClockAheadGoesSilent: a node whose clock is 5 minutes ahead
// stored a heartbeat 5 minutes in the server's future. When it goes
// silent it is marked unreachable after the grace, as any node, not 5
// minutes later; and a ClockSkew warning says why its times are not
// trusted (found by the clock skew scenario of test/faults).
func TestNodeClockAheadGoesSilent(t *testing.T) {
	h := newHarness(t)
	n := readyNode("ahead", nil)
	n.Status.Conditions[0].LastHeartbeatTime = api.NewTime(h.clk.Now().Add(5 * time.Minute))
	h.create(n)
	h.settle()
	h.beatAndAdvance(20*time.Second, "ahead")
	if h.rec.has(ReasonClockSkew) != 1 {
		t.Fatalf("%d ClockSkew events for a node 5 minutes ahead; want 1", h.rec.has(ReasonClockSkew))
	}
	h.beatAndAdvance(40 * time.Second) // silent for the grace
	h.beatAndAdvance(5 * time.Second)
	got := h.get("nodes", "", "ahead").(*api.Node)
	if !hasTaint(got, TaintUnreachable, api.TaintEffectNoExecute) {
		t.Fatalf("node ahead of the server's clock not unreachable after the grace: taints %v", got.Spec.Taints)
	}
	if h.rec.has(ReasonClockSkew) != 1 {
		t.Errorf("%d ClockSkew events; want still 1 (once per node)", h.rec.has(ReasonClockSkew))
	}
}
