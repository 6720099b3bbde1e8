package controllers

import (
	"testing"

	"github.com/skiffhq/skiff/api"
)

func TestDaemonSetFollowsNodeLabels(t *testing.T) {
	h := newHarness(t)
	h.create(readyNode("a", map[string]string{"role": "edge"}))
	h.create(readyNode("b", map[string]string{"role": "edge"}))
	h.create(readyNode("c", nil))
	ds := h.create(daemonSet("agent", "fluent-bit:1", map[string]string{"role": "edge"})).(*api.DaemonSet)
	h.settle()
	want := func(what string, nodes ...string) {
		t.Helper()
		s := h.statsOf(ds.UID)
		if s.active != len(nodes) {
			t.Fatalf("%s: %d daemon pods on %v; want one on each of %v", what, s.active, s.byNode, nodes)
		}
		for _, n := range nodes {
			if s.byNode[n] != 1 {
				t.Fatalf("%s: daemon pods per node %v; want one on each of %v", what, s.byNode, nodes)
			}
		}
	}
	want("at create", "a", "b")
	for _, p := range h.pods() {
		if len(p.Spec.Tolerations) < len(daemonTolerations) {
			t.Errorf("daemon pod %s tolerations %v; want the daemon tolerations added", p.Name, p.Spec.Tolerations)
		}
	}

	// A node that starts matching gets one; one that stops loses it.
	h.edit("nodes", "", "c", func(o api.Object) { o.GetObjectMeta().Labels = map[string]string{"role": "edge"} })
	h.settle()
	want("after c was labelled", "a", "b", "c")
	h.edit("nodes", "", "a", func(o api.Object) { o.GetObjectMeta().Labels = nil })
	h.settle()
	h.run("a", "b", "c")
	h.settle()
	want("after a was unlabelled", "b", "c")
	// A new matching node gets one; a deleted node's pod goes with it.
	h.create(readyNode("d", map[string]string{"role": "edge"}))
	h.settle()
	want("after d joined", "b", "c", "d")
	// An untolerated NoSchedule taint keeps new daemons off a node.
	n := readyNode("e", map[string]string{"role": "edge"})
	n.Spec.Taints = []api.Taint{{Key: "dedicated", Value: "gpu", Effect: api.TaintEffectNoSchedule}}
	h.create(n)
	h.settle()
	want("after tainted e joined", "b", "c", "d")

	h.run("b", "c", "d")
	h.settle()
	got := h.get("daemonsets", "default", "agent").(*api.DaemonSet)
	if st := got.Status; st.DesiredNumberScheduled != 3 || st.CurrentNumberScheduled != 3 || st.NumberReady != 3 || st.UpdatedNumberScheduled != 3 || st.NumberAvailable != 3 {
		t.Errorf("status = %+v; want 3 desired, current, ready, updated, available", st)
	}
	if h.rec.has(reasonSuccessfulCreate) < 4 {
		t.Errorf("SuccessfulCreate events = %d; want at least 4", h.rec.has(reasonSuccessfulCreate))
	}
}

func TestDaemonSetRollingUpdateMaxUnavailable(t *testing.T) {
	h := newHarness(t)
	names := []string{"a", "b", "c", "d", "e"}
	for _, n := range names {
		h.create(readyNode(n, nil))
	}
	dsObj := daemonSet("agent", "fluent-bit:1", nil)
	two := api.FromInt(2)
	dsObj.Spec.UpdateStrategy = api.DaemonSetUpdateStrategy{Type: api.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &api.RollingUpdateDaemonSet{MaxUnavailable: &two}}
	ds := h.create(dsObj).(*api.DaemonSet)
	h.settle()
	h.run(names...)
	h.settle()
	h.edit("daemonsets", "default", "agent", func(o api.Object) {
		o.(*api.DaemonSet).Spec.Template.Spec.Containers[0].Image = "fluent-bit:2"
	})
	h.settle()
	for step := 0; ; step++ {
		if step > 50 {
			t.Fatal("daemon rollout did not finish in 50 steps")
		}
		s := h.statsOf(ds.UID)
		if s.ready < len(names)-2 {
			t.Fatalf("step %d: %d nodes with a ready daemon; want at least %d", step, s.ready, len(names)-2)
		}
		for n, c := range s.byNode {
			if c > 1 {
				t.Fatalf("step %d: node %s runs %d daemon pods", step, n, c)
			}
		}
		got := h.get("daemonsets", "default", "agent").(*api.DaemonSet)
		if got.Status.UpdatedNumberScheduled == 5 && got.Status.NumberAvailable == 5 {
			break
		}
		h.run(names...)
		h.settle()
	}
	for _, p := range h.pods() {
		if p.Spec.Containers[0].Image != "fluent-bit:2" {
			t.Errorf("pod %s runs %s after the rollout", p.Name, p.Spec.Containers[0].Image)
		}
	}
}

func TestNodePlacement(t *testing.T) {
	ds := daemonSet("x", "img", map[string]string{"role": "edge"})
	tmpl := daemonTemplate(ds)
	node := func(labels map[string]string, taints ...api.Taint) *api.Node {
		n := readyNode("n", labels)
		n.Spec.Taints = taints
		return n
	}
	edge := map[string]string{"role": "edge"}
	for _, tc := range []struct {
		name          string
		node          *api.Node
		wantRun, stay bool
	}{
		{"matching", node(edge), true, true},
		{"not matching", node(nil), false, false},
		{"unreachable", node(edge, api.Taint{Key: TaintUnreachable, Effect: api.TaintEffectNoExecute}, api.Taint{Key: TaintUnreachable, Effect: api.TaintEffectNoSchedule}), false, true},
		{"cordoned", node(edge, api.Taint{Key: "node.kubernetes.io/unschedulable", Effect: api.TaintEffectNoSchedule}), true, true},
		{"foreign NoExecute", node(edge, api.Taint{Key: "evict", Effect: api.TaintEffectNoExecute}), false, false},
	} {
		run, stay := nodePlacement(schedPodInfo(tmpl), tc.node)
		if run != tc.wantRun || stay != tc.stay {
			t.Errorf("nodePlacement(%s) = %v, %v; want %v, %v", tc.name, run, stay, tc.wantRun, tc.stay)
		}
	}
}
