package kubelet

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/api"
)

func TestAdmitRefusesPodWhichNeverStarts(t *testing.T) {
	var seen [][]string
	h := newAdmitHarness(t, func(pod *api.Pod, others []*api.Pod) (bool, string, string) {
		var names []string
		for _, o := range others {
			names = append(names, o.UID)
		}
		seen = append(seen, names)
		if pod.UID == "big" {
			return false, "OutOfmemory", "Node didn't have enough resource: memory"
		}
		return true, "", ""
	})
	h.send(config.ADD, mkPod("ok", "c"))
	h.settle()
	h.send(config.ADD, mkPod("big", "c"))
	h.settle()
	if _, ok := h.newest("big", "c"); ok || h.rt.HasSandbox("big") {
		t.Fatal("refused pod was started")
	}
	st := h.status.get("big")
	if st.Phase != api.PodFailed || st.Reason != "OutOfmemory" || st.Message == "" {
		t.Errorf("refused pod status = %s/%s/%q; want Failed/OutOfmemory with a message", st.Phase, st.Reason, st.Message)
	}
	if len(seen) != 2 || len(seen[0]) != 0 || len(seen[1]) != 1 || seen[1][0] != "ok" {
		t.Errorf("Admit saw others = %v; want [] then [ok]", seen)
	}
	// a later update neither re-admits nor starts it
	h.send(config.UPDATE, mkPod("big", "c"))
	h.settle()
	if _, ok := h.newest("big", "c"); ok || len(seen) != 2 {
		t.Errorf("update of a refused pod: started=%v, admissions=%d; want not started, 2", ok, len(seen))
	}
	for _, p := range h.k.Pods() {
		if p.Pod.UID == "big" && p.State != PodTerminated {
			t.Errorf("Pods() state of refused pod = %v; want Terminated", p.State)
		}
	}
	// deleting it confirms at once
	del := mkPod("big", "c")
	del.DeletionTimestamp = api.NewTimePtr(t0)
	h.send(config.DELETE, del)
	h.settle()
	if h.status.terminatedCount("big") != 1 {
		t.Errorf("PodTerminated(big) calls = %d; want 1", h.status.terminatedCount("big"))
	}
}

func TestKillPodWithStatusEndsEvicted(t *testing.T) {
	h := newHarness(t)
	h.send(config.ADD, mkPod("u1", "c"))
	h.settle()
	if err := h.k.KillPodWithStatus("u1", 0, "Evicted", "The node was low on resource: memory."); err != nil {
		t.Fatal(err)
	}
	h.settle()
	st := h.status.get("u1")
	if st.Phase != api.PodFailed || st.Reason != "Evicted" || st.Message != "The node was low on resource: memory." {
		t.Errorf("status = %s/%s/%q; want Failed/Evicted with the message", st.Phase, st.Reason, st.Message)
	}
	if c, _ := h.newest("u1", "c"); c.State == runtime.StateRunning {
		t.Error("container still running after eviction")
	}
	for _, c := range h.rt.Calls() {
		if c.Method == fake.MethodStopContainer && c.Grace != 0 {
			t.Errorf("StopContainer grace = %v; want 0 (hard eviction)", c.Grace)
		}
	}
	if got := gracePeriod(mkPod("x"), ptr(int64(0))); got != 0*time.Second {
		t.Errorf("gracePeriod(override 0) = %v; want 0", got)
	}
}
