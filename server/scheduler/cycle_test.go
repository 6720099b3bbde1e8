package scheduler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
)

func TestScheduleChoosesBestNode(t *testing.T) {
	nodes := []*api.Node{
		st.Node("busy", "4", "8Gi"),
		st.Node("empty", "4", "8Gi"),
		st.Node("gpu", "4", "8Gi", st.Taint("dedicated", "gpu", "NoSchedule")),
		st.Node("soft", "4", "8Gi", st.Taint("spot", "", "PreferNoSchedule")),
	}
	bound := []*api.Pod{st.Pod("o", "3", "6Gi", st.OnNode("busy"))}
	tests := []struct {
		name    string
		scoring Scoring
		pod     *api.Pod
		want    string
	}{
		{"least allocated avoids busy and soft-tainted", LeastAllocated, st.Pod("p", "500m", "1Gi"), "empty"},
		{"most allocated packs", MostAllocated, st.Pod("p", "500m", "1Gi"), "busy"},
		{"toleration opens the gpu node", LeastAllocated, st.Pod("p", "500m", "1Gi", st.Tolerate("dedicated", "Equal", "gpu", ""), st.NodeSelector()), ""},
		{"preferred affinity", LeastAllocated, st.Pod("p", "100m", "", st.Preferred(100, "kubernetes.io/hostname", "In", "soft")), "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &Algorithm{Scoring: tc.scoring}
			d, _, err := a.Schedule(NewSnapshot(nodes, bound), NewPodInfo(tc.pod), 0)
			if err != nil {
				t.Fatalf("Schedule(%s) = %v", tc.pod.Name, err)
			}
			if tc.want != "" && d.Node != tc.want {
				t.Errorf("Schedule(%s).Node = %q; want %q", tc.pod.Name, d.Node, tc.want)
			}
			if d.Feasible == 0 || d.Evaluated != len(nodes) {
				t.Errorf("Decision = %+v; want all %d evaluated", d, len(nodes))
			}
		})
	}
}

func TestScheduleFitError(t *testing.T) {
	nodes := []*api.Node{
		st.Node("a", "1", "1Gi"), st.Node("b", "1", "1Gi"), st.Node("c", "1", "1Gi"),
		st.Node("d", "8", "16Gi", st.Taint("dedicated", "gpu", "NoSchedule")),
		st.Node("e", "8", "16Gi", st.Taint("dedicated", "gpu", "NoSchedule")),
	}
	_, cands, err := (&Algorithm{}).Schedule(NewSnapshot(nodes, nil), NewPodInfo(st.Pod("p", "500m", "2Gi")), 3)
	var fe *FitError
	if !errors.As(err, &fe) {
		t.Fatalf("Schedule = %v; want *FitError", err)
	}
	want := "0/5 nodes are available: 2 node(s) had untolerated taint {dedicated: gpu}, 3 Insufficient memory."
	if fe.Error() != want {
		t.Errorf("Error() = %q; want %q", fe.Error(), want)
	}
	if len(cands) != 3 {
		t.Errorf("preemption candidates = %d; want the 3 small nodes", len(cands))
	}
}

// TestScheduleReplayable checks the tie-break is a function of the pod's
// UID: identical nodes, many workers, same answer every time.
func TestScheduleReplayable(t *testing.T) {
	var nodes []*api.Node
	for i := range 500 {
		nodes = append(nodes, st.Node(fmt.Sprintf("n%03d", i), "4", "8Gi"))
	}
	snap := NewSnapshot(nodes, nil)
	seen := map[string]bool{}
	for i := range 20 {
		pi := NewPodInfo(st.Pod(fmt.Sprintf("p%d", i), "1", "1Gi"))
		var first string
		for try := range 5 {
			d, _, err := (&Algorithm{Workers: 4}).Schedule(snap, pi, 7)
			if err != nil {
				t.Fatal(err)
			}
			if try == 0 {
				first = d.Node
			} else if d.Node != first {
				t.Fatalf("Schedule(%s) try %d = %s; want %s as on try 0", pi.Key, try, d.Node, first)
			}
		}
		seen[first] = true
	}
	if len(seen) < 10 {
		t.Errorf("20 pods went to %d distinct nodes among equal ones; want the shuffle to spread them", len(seen))
	}
}

func TestScheduleStopsAfterEnoughFeasible(t *testing.T) {
	var nodes []*api.Node
	for i := range 5000 {
		nodes = append(nodes, st.Node(fmt.Sprintf("n%04d", i), "4", "8Gi"))
	}
	snap := NewSnapshot(nodes, nil)
	a := &Algorithm{Workers: 2}
	d, _, err := a.Schedule(snap, NewPodInfo(st.Pod("p", "1", "1Gi")), 4990)
	if err != nil {
		t.Fatal(err)
	}
	if d.Feasible != 500 || d.Evaluated != 500 || d.Next != (4990+500)%5000 {
		t.Errorf("Decision = %+v; want 500 feasible of 500 evaluated (10%% of 5000), next 490", d)
	}
	if got := (&Algorithm{Percentage: 100}).numToFind(5000); got != 5000 {
		t.Errorf("numToFind(5000) at 100%% = %d", got)
	}
	if got := a.numToFind(99); got != 99 {
		t.Errorf("numToFind(99) = %d; want all", got)
	}
}

// TestOwnerSpreadEitherWay: the OwnerSpread raw scores are the owner's
// pod count on each found node whether ownerSpread walks the owner's
// nodes (fewer than the found ones) or the found nodes (fewer than the
// owner's: a large Deployment over many nodes).
func TestOwnerSpreadEitherWay(t *testing.T) {
	var nodes []*api.Node
	for i := range 40 {
		nodes = append(nodes, st.Node(fmt.Sprintf("n%02d", i), "8", "16Gi"))
	}
	var pods []*api.Pod
	for i := range 30 { // rs1: 1 pod on n00…n29, and a second on n00…n09
		pods = append(pods, st.Pod(fmt.Sprintf("a%d", i), "", "", st.Owner("rs1"), st.OnNode(fmt.Sprintf("n%02d", i))))
		if i < 10 {
			pods = append(pods, st.Pod(fmt.Sprintf("b%d", i), "", "", st.Owner("rs1"), st.OnNode(fmt.Sprintf("n%02d", i))))
		}
	}
	snap := NewSnapshot(nodes, pods)
	pi := NewPodInfo(st.Pod("p", "", "", st.Owner("rs1")))
	want := func(name string) int64 {
		var i int
		fmt.Sscanf(name, "n%d", &i)
		switch {
		case i < 10:
			return 2
		case i < 30:
			return 1
		}
		return 0
	}
	for _, kept := range []int{5, 40} { // fewer than the owner's 30 nodes, more
		var all []found
		for i, ni := range snap.Nodes {
			if i%(40/kept) == 0 || kept == 40 {
				all = append(all, found{pos: i, ni: ni})
			}
		}
		sc := new(scratch)
		sc.ownerSpread(snap, pi, all)
		for _, f := range all {
			if got := f.raw[ownerSpreadScorer]; got != want(f.ni.Name) {
				t.Errorf("%d found: %s scores %d; want %d", len(all), f.ni.Name, got, want(f.ni.Name))
			}
		}
	}
}
