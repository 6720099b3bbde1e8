package scheduler

import (
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
)

// memHarness runs the scheduler's decision path — Queue, Cache, Algorithm
// and Preempt — in memory, binding instantly, so whole workloads can be
// checked without a store.
type memHarness struct {
	clk   *clock.Fake
	cache *Cache
	queue *Queue
	algo  Algorithm
	next  int
	bound map[string]string
}

func newMemHarness(nodes []*api.Node) *memHarness {
	h := &memHarness{clk: clock.NewFake(st.Epoch), cache: NewCache(DefaultAssumeTTL), queue: NewQueue(), bound: map[string]string{}}
	for _, n := range nodes {
		h.cache.SetNode(n)
	}
	return h
}

// run schedules everything queued until the active queue is empty and
// returns the unschedulable pods' messages.
func (h *memHarness) run() map[string]string {
	failed := map[string]string{}
	for qp := h.queue.Pop(h.clk.Now()); qp != nil; qp = h.queue.Pop(h.clk.Now()) {
		d, _, err := h.algo.Schedule(h.cache.Snapshot(), qp.PodInfo, h.next)
		if err != nil {
			failed[qp.Key] = err.Error()
			h.queue.Requeue(qp, true, h.clk.Now())
			continue
		}
		h.next = d.Next
		if err := h.cache.AssumePod(qp.PodInfo, d.Node); err != nil {
			panic(err)
		}
		h.cache.FinishBinding(qp.Key, h.clk.Now())
		h.queue.Done(qp.Key)
		h.bound[qp.Key] = d.Node
		delete(failed, qp.Key)
	}
	return failed
}

func TestMemHarnessFillsClusterWithoutOvercommit(t *testing.T) {
	nodes := benchNodes(50)
	h := newMemHarness(nodes)
	for i := range 3000 {
		h.queue.Add(NewPodInfo(benchPod(i)), h.clk.Now())
	}
	failed := h.run()
	if len(failed) != 0 {
		for k, msg := range failed {
			t.Errorf("%s unschedulable: %s", k, msg)
		}
	}
	for _, ni := range h.cache.Snapshot().Nodes {
		if ni.Requested.MilliCPU > ni.Allocatable.MilliCPU || ni.Requested.Memory > ni.Allocatable.Memory || ni.PodCount > ni.AllowedPods {
			t.Errorf("node %s over capacity: %+v, %d pods", ni.Name, ni.Requested, ni.PodCount)
		}
		for i, p := range ni.UsedPorts {
			for _, q := range ni.UsedPorts[i+1:] {
				if p.conflicts(q) {
					t.Errorf("node %s: port %d twice", ni.Name, p.Port)
				}
			}
		}
	}
	// Replay: the same workload on the same cluster lands identically.
	h2 := newMemHarness(nodes)
	for i := range 3000 {
		h2.queue.Add(NewPodInfo(benchPod(i)), h2.clk.Now())
	}
	h2.run()
	for k, n := range h.bound {
		if h2.bound[k] != n {
			t.Fatalf("replay put %s on %s; first run on %s", k, h2.bound[k], n)
		}
	}
}

func TestMemHarnessPreemptChoosesCheapestNode(t *testing.T) {
	nodes := []*api.Node{st.Node("a", "2", "4Gi"), st.Node("b", "2", "4Gi"), st.Node("c", "2", "4Gi")}
	pods := []*api.Pod{
		// a: two low-priority pods would have to go.
		st.Pod("a1", "600m", "", st.OnNode("a"), st.Priority(1)), st.Pod("a2", "600m", "", st.OnNode("a"), st.Priority(1)),
		st.Pod("a3", "600m", "", st.OnNode("a"), st.Priority(1)),
		// b: one pod of priority 5.
		st.Pod("b1", "2", "", st.OnNode("b"), st.Priority(5)),
		// c: one pod of priority 1 and one of higher priority than the preemptor.
		st.Pod("c1", "1", "", st.OnNode("c"), st.Priority(1)), st.Pod("c2", "1", "", st.OnNode("c"), st.Priority(500)),
	}
	snap := NewSnapshot(nodes, pods)
	pi := NewPodInfo(st.Pod("vip", "1", "", st.Priority(100)))
	algo := &Algorithm{}
	_, cands, err := algo.Schedule(snap, pi, 0)
	if err == nil {
		t.Fatal("Schedule found room; want none")
	}
	v, ok := algo.Preempt(cands, pi)
	if !ok || v.Node != "c" || len(v.Pods) != 1 || v.Pods[0].Pod.Name != "c1" {
		t.Fatalf("Preempt = %+v, %v; want c1 on c (one victim of priority 1)", v, ok)
	}
	// Nothing lower than the preemptor: no victims.
	if _, ok := algo.Preempt(cands, NewPodInfo(st.Pod("low", "1", "", st.Priority(0)))); ok {
		t.Error("Preempt for priority 0 = ok; want no victims")
	}
}
