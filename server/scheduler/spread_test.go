package scheduler

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
)

const zoneKey = "topology.kubernetes.io/zone"

// zonedNodes are n nodes over zones z0..z(zones-1), round robin.
func zonedNodes(n, zones int) []*api.Node {
	var out []*api.Node
	for i := range n {
		out = append(out, st.Node(fmt.Sprintf("n%03d", i), "8", "16Gi", st.Labels(zoneKey, fmt.Sprintf("z%d", i%zones))))
	}
	return out
}

func zoneOf(c *Cache, node string) string { return c.Node(node).Labels[zoneKey] }

// TestSpreadDoNotScheduleGoesToTheEmptiestZone: zone z0 holds two of the
// app's pods, z2 one, z1 none; with maxSkew 1 only z1 is allowed (z0
// and z2 would reach a skew of 3 and 2), whatever the resource scores
// say, and pods of another app or namespace do not count.
func TestSpreadDoNotScheduleGoesToTheEmptiestZone(t *testing.T) {
	nodes := zonedNodes(6, 3) // n000 z0, n001 z1, n002 z2, n003 z0, ...
	bound := []*api.Pod{
		st.Pod("a", "100m", "", st.PodLabels("app", "web"), st.OnNode("n000")),
		st.Pod("b", "100m", "", st.PodLabels("app", "web"), st.OnNode("n003")),
		st.Pod("c", "100m", "", st.PodLabels("app", "web"), st.OnNode("n002")),
		// Fill z1's nodes with others' pods: the resource score alone
		// would keep the new pod away from them.
		st.Pod("x", "6", "", st.PodLabels("app", "db"), st.OnNode("n001")),
		st.Pod("y", "6", "", st.PodLabels("app", "web"), st.OnNode("n004"), func(p *api.Pod) { p.Namespace = "other" }),
	}
	pod := st.Pod("p", "100m", "", st.PodLabels("app", "web"), st.Spread(1, zoneKey, api.DoNotSchedule, "web"))
	d, _, err := (&Algorithm{}).Schedule(NewSnapshot(nodes, bound), NewPodInfo(pod), 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Node != "n001" && d.Node != "n004" {
		t.Fatalf("Schedule = %s; want a node of zone z1 (n001, n004)", d.Node)
	}
}

// TestSpreadFitErrorNamesTheConstraint: a node without the key is no
// candidate, and when no zone may take the pod the FitError says why.
func TestSpreadFitErrorNamesTheConstraint(t *testing.T) {
	nodes := append(zonedNodes(2, 2), st.Node("bare", "8", "16Gi"))
	bound := []*api.Pod{st.Pod("a", "100m", "", st.PodLabels("app", "web"), st.OnNode("n000"))}
	// Only z1 is allowed; make its node full.
	nodes[1] = st.Node("n001", "8", "16Gi", st.Labels(zoneKey, "z1"), st.MaxPods("0"))
	pod := st.Pod("p", "100m", "", st.PodLabels("app", "web"), st.Spread(1, zoneKey, api.DoNotSchedule, "web"))
	_, _, err := (&Algorithm{}).Schedule(NewSnapshot(nodes, bound), NewPodInfo(pod), 0)
	var fe *FitError
	if !errors.As(err, &fe) {
		t.Fatalf("Schedule = %v; want a FitError", err)
	}
	for _, want := range []string{"1 node(s) didn't match pod topology spread constraints,", "1 node(s) didn't match pod topology spread constraints (missing required label)", "1 Too many pods"} {
		if !strings.Contains(fe.Error(), want) {
			t.Errorf("FitError %q; want it to contain %q", fe.Error(), want)
		}
	}
}

// TestSpreadScheduleAnywayPrefersEmptierZones: the soft constraint
// outweighs nothing else here, so the pod goes to the emptier zone.
func TestSpreadScheduleAnywayPrefersEmptierZones(t *testing.T) {
	nodes := zonedNodes(4, 2)
	bound := []*api.Pod{
		st.Pod("a", "100m", "", st.PodLabels("app", "web"), st.OnNode("n000")),
		st.Pod("b", "100m", "", st.PodLabels("app", "web"), st.OnNode("n002")),
		st.Pod("c", "100m", "", st.PodLabels("app", "db"), st.OnNode("n001")),
		st.Pod("d", "100m", "", st.PodLabels("app", "db"), st.OnNode("n003")),
	}
	pod := st.Pod("p", "100m", "", st.PodLabels("app", "web"), st.Spread(1, zoneKey, api.ScheduleAnyway, "web"))
	d, _, err := (&Algorithm{}).Schedule(NewSnapshot(nodes, bound), NewPodInfo(pod), 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.Node != "n001" && d.Node != "n003" {
		t.Fatalf("Schedule = %s; want a node of the empty zone z1", d.Node)
	}
}

// TestSpreadThroughTheCache places 300 pods of one app one by one
// through a Cache (as the scheduling loop does, with the equivalence
// cache on) over 40 nodes in 4 zones, with some assumptions forgotten
// and a node relabelled on the way: the zones never differ by more than
// maxSkew, and the kept counts always equal a fresh count.
func TestSpreadThroughTheCache(t *testing.T) {
	c := NewCache(time.Minute)
	for _, n := range zonedNodes(40, 4) {
		c.SetNode(n)
	}
	c.SetNode(st.Node("bare", "8", "16Gi")) // no zone: never a candidate
	a := &Algorithm{}
	rng := rand.New(rand.NewPCG(1, 2))
	var placed []*PodInfo
	next, rejected := 0, 0
	for i := range 300 {
		pi := NewPodInfo(st.Pod(fmt.Sprintf("p%03d", i), "10m", "", st.PodLabels("app", "web"), st.Owner("rs-1"), st.Spread(1, zoneKey, api.DoNotSchedule, "web")))
		snap := c.Snapshot()
		d, _, err := a.Schedule(snap, pi, next)
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		next = d.Next
		if err := c.AssumePod(pi, d.Node); err != nil {
			t.Fatal(err)
		}
		placed = append(placed, pi)
		if rng.IntN(10) == 0 { // a failed bind
			victim := placed[rng.IntN(len(placed))]
			c.ForgetPod(victim.Key)
			placed = removeInfo(placed, victim)
		}
		if i == 150 { // z3's n003 moves to z0: the counts are rebuilt
			c.SetNode(st.Node("n003", "8", "16Gi", st.Labels(zoneKey, "z0")))
		}
		if i == 200 { // a new node: the list and the positions change
			c.SetNode(st.Node("a-new", "8", "16Gi", st.Labels(zoneKey, "z1")))
		}
		counts := map[string]int32{}
		for _, p := range placed {
			node, _ := c.PodNode(p.Key)
			counts[zoneOf(c, node)]++
		}
		lo, hi := int32(1<<30), int32(0)
		for _, z := range []string{"z0", "z1", "z2", "z3"} {
			lo, hi = min(lo, counts[z]), max(hi, counts[z])
		}
		// A forgotten pod or a relabelled node may leave a skew the next
		// pods then repair; never more than 3 after the relabelling.
		if limit := int32(1); i < 150 && hi-lo > limit+1 {
			t.Fatalf("after pod %d the zones hold %v; want a skew of at most %d", i, counts, limit+1)
		}
		kept := c.spreadIndex("default", &pi.spread[0]).counts
		fresh := &spreadIndex{ns: "default", key: zoneKey, sel: pi.spread[0].sel, counts: map[string]int32{}}
		fillSpread(fresh, c.Snapshot().Nodes)
		if !maps.Equal(kept, fresh.counts) {
			t.Fatalf("after pod %d the kept counts are %v; a fresh count is %v", i, kept, fresh.counts)
		}
		// The filter's reading by node position agrees with the labels.
		ix := c.spreadIndex("default", &pi.spread[0])
		for _, ni := range c.Snapshot().Nodes {
			id, known := ix.domainOf(ni)
			v, labelled := ni.Labels[zoneKey]
			switch {
			case !known:
				t.Fatalf("after pod %d the index does not know node %s's position", i, ni.Name)
			case !labelled && id != -1, labelled && (id < 0 || ix.byDom[id] != kept[v]):
				t.Fatalf("after pod %d node %s (zone %q) reads domain %d; counts %v by number %v", i, ni.Name, v, id, kept, ix.byDom)
			}
		}
		// The search's pre-filter, reading by position, rejects exactly
		// the nodes the filter rejects (every node's position is known).
		probe := NewPodInfo(st.Pod("probe", "10m", "", st.PodLabels("app", "web"), st.Owner("rs-1"), st.Spread(1, zoneKey, api.DoNotSchedule, "web")))
		snap = c.Snapshot()
		states := spreadStates(snap, probe)
		for pos, ni := range snap.Nodes {
			pre, full := spreadRejectsAt(states, pos, ni), len(spreadFits(states, ni, nil)) > 0
			if pre != full {
				t.Fatalf("after pod %d node %s (zone %q): pre-filter rejects %v, filter %v; counts %v", i, ni.Name, ni.Labels[zoneKey], pre, full, kept)
			}
			rejected += b2i(pre)
		}
	}
	if rejected == 0 {
		t.Error("the pre-filter rejected no node in 300 placements")
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func removeInfo(s []*PodInfo, x *PodInfo) []*PodInfo {
	for i, p := range s {
		if p == x {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}
