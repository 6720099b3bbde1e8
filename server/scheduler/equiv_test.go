package scheduler

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/skiffhq/skiff/api"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
)

// uncached is snap without its equivalence-class cache: every filter and
// score runs, the reference the cached search must agree with.
func uncached(snap Snapshot) Snapshot {
	snap.classes = nil
	snap.owners = nil
	return snap
}

// TestEquivalenceCacheMatchesFullSearch schedules a mixed workload while
// nodes change labels, taints, readiness, liveness and membership and
// pods come and go, and checks every decision (node, evaluated, feasible,
// next; or the FitError and preemption candidates) is the one the full
// search makes.
func TestEquivalenceCacheMatchesFullSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nodes := benchNodes(300)
	c := NewCache(DefaultAssumeTTL)
	for _, n := range nodes {
		c.SetNode(n)
	}
	for _, pct := range []int{0, 20} {
		a := &Algorithm{Percentage: pct, Workers: 2}
		next := 0
		var placed []string
		for i := range 4000 {
			switch r := rng.IntN(100); {
			case r < 3: // relabel a node
				n := *nodes[rng.IntN(len(nodes))]
				n.Labels = map[string]string{"zone": fmt.Sprintf("z%d", rng.IntN(10)), "tier": []string{"edge", "core"}[rng.IntN(2)], "gen": fmt.Sprint(1 + rng.IntN(5))}
				c.SetNode(&n)
			case r < 5: // taint or untaint
				n := *nodes[rng.IntN(len(nodes))]
				if rng.IntN(2) == 0 {
					n.Spec.Taints = []api.Taint{{Key: "dedicated", Value: "gpu", Effect: api.TaintEffectNoSchedule}}
				} else {
					n.Spec.Taints = nil
				}
				c.SetNode(&n)
			case r < 6: // cordon
				n := *nodes[rng.IntN(len(nodes))]
				n.Spec.Unschedulable = !n.Spec.Unschedulable
				c.SetNode(&n)
			case r < 7: // heartbeats stop or resume
				if ni := c.Node(nodes[rng.IntN(len(nodes))].Name); ni != nil {
					c.SetStale(ni, !ni.Stale)
				}
			case r < 8: // a node pulls or drops images
				n := *nodes[rng.IntN(len(nodes))]
				n.Status.Images = nil
				for _, img := range []string{"registry.local/app:1", "registry.local/other:2"} {
					if rng.IntN(2) == 0 {
						n.Status.Images = append(n.Status.Images, api.ContainerImage{Names: []string{img}, SizeBytes: int64(100+rng.IntN(900)) << 20})
					}
				}
				c.SetNode(&n)
			case r < 9: // a node leaves or comes back
				n := nodes[rng.IntN(len(nodes))]
				if c.Node(n.Name) != nil {
					c.RemoveNode(n.Name)
				} else {
					c.SetNode(n)
				}
			case r < 16 && len(placed) > 0: // a pod goes
				k := rng.IntN(len(placed))
				c.RemovePod(placed[k])
				placed = append(placed[:k], placed[k+1:]...)
			}
			p := benchPod(rng.IntN(200))
			if rng.IntN(3) == 0 {
				p.Spec.Containers[0].Image = "registry.local/other:2"
			}
			p.Name = fmt.Sprintf("p%d-%d", pct, i)
			p.UID = p.Name
			pi := NewPodInfo(p)
			snap := c.Snapshot()
			start := next
			want, wantCands, wantErr := a.Schedule(uncached(snap), pi, start)
			got, gotCands, gotErr := a.Schedule(snap, pi, start)
			if got != want || !reflect.DeepEqual(gotCands, wantCands) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("pod %d (%s): cached = %+v, %d candidates, %v; full = %+v, %d candidates, %v",
					i, pi.class, got, len(gotCands), gotErr, want, len(wantCands), wantErr)
			}
			if gotErr != nil {
				var fe *FitError
				if !errors.As(gotErr, &fe) {
					t.Fatal(gotErr)
				}
				continue
			}
			next = got.Next
			if err := c.AssumePod(pi, got.Node); err != nil {
				t.Fatal(err)
			}
			placed = append(placed, pi.Key)
		}
	}
}

// TestEquivalenceCacheInvalidatesChangedNode checks a cached verdict is
// recomputed when its node changes: a pod of the same class follows a
// node's new label, taint and liveness at once.
func TestEquivalenceCacheInvalidatesChangedNode(t *testing.T) {
	c := NewCache(DefaultAssumeTTL)
	c.SetNode(st.Node("a", "4", "8Gi", st.Labels("tier", "edge")))
	c.SetNode(st.Node("b", "4", "8Gi", st.Labels("tier", "core")))
	a := &Algorithm{}
	schedule := func(name string) (string, error) {
		p := st.Pod(name, "100m", "100Mi", st.NodeSelector("tier", "edge"), st.Owner("rs"))
		d, _, err := a.Schedule(c.Snapshot(), NewPodInfo(p), 0)
		return d.Node, err
	}
	if n, err := schedule("p1"); err != nil || n != "a" {
		t.Fatalf("p1 went to %q, %v; want a", n, err)
	}
	c.SetNode(st.Node("a", "4", "8Gi", st.Labels("tier", "core")))
	c.SetNode(st.Node("b", "4", "8Gi", st.Labels("tier", "edge")))
	if n, err := schedule("p2"); err != nil || n != "b" {
		t.Fatalf("after relabelling, p2 went to %q, %v; want b", n, err)
	}
	c.SetNode(st.Node("b", "4", "8Gi", st.Labels("tier", "edge"), st.Taint("k", "v", "NoSchedule")))
	if _, err := schedule("p3"); err == nil {
		t.Fatal("p3 scheduled onto the only edge node though it is now tainted")
	}
	c.SetNode(st.Node("b", "4", "8Gi", st.Labels("tier", "edge")))
	if n, err := schedule("p4a"); err != nil || n != "b" {
		t.Fatalf("after the taint went, p4a went to %q, %v; want b", n, err)
	}
	c.SetStale(c.Node("b"), true)
	if _, err := schedule("p4"); err == nil {
		t.Fatal("p4 scheduled onto the only edge node though its heartbeats stopped")
	}
	c.SetStale(c.Node("b"), false)
	if n, err := schedule("p5"); err != nil || n != "b" {
		t.Fatalf("after heartbeats resumed, p5 went to %q, %v; want b", n, err)
	}
}

func TestClassKey(t *testing.T) {
	key := func(opts ...st.PodOpt) string {
		return NewPodInfo(st.Pod("p", "100m", "1Gi", opts...)).class
	}
	if key() != key(st.Owner("x")) || key() != NewPodInfo(st.Pod("q", "100m", "1Gi")).class {
		t.Error("pods differing only in name or owner are in different classes")
	}
	distinct := map[string]bool{key(): true}
	for _, k := range []string{
		NewPodInfo(st.Pod("p", "200m", "1Gi")).class,
		NewPodInfo(st.Pod("p", "", "")).class, // best effort: memory pressure treats it differently
		key(st.NodeSelector("tier", "edge")), key(st.NodeSelector("tier", "core")),
		key(st.Required("zone", "In", "z1")), key(st.Preferred(5, "zone", "In", "z1")),
		key(st.Tolerate("dedicated", "Equal", "gpu", "NoSchedule")),
		key(st.HostPort(80)), key(st.HostPort(81)),
		key(st.Image("registry.local/other:1")),
	} {
		if distinct[k] {
			t.Errorf("class %s shared by pods with different requirements", k)
		}
		distinct[k] = true
	}
}

// TestClassCacheBounded checks classes beyond maxClasses evict the least
// recently used.
func TestClassCacheBounded(t *testing.T) {
	cc := newClassCache()
	if cc.take(classID{key: "once"}, 3, 1) != nil {
		t.Fatal("a class seen for the first time got entries")
	}
	take := func(key string) {
		if c := cc.take(classID{key: key}, 3, 1); c != nil {
			c.mu.Unlock()
		}
	}
	for i := range maxClasses + 10 {
		take(fmt.Sprint(i))
		take(fmt.Sprint(i))
		take("hot")
	}
	if len(cc.classes) > maxClasses {
		t.Errorf("%d classes kept; want at most %d", len(cc.classes), maxClasses)
	}
	if cc.classes[classID{key: "hot"}] == nil {
		t.Error("the most used class was evicted")
	}
}
