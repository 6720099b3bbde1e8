package eviction

import (
	"testing"

	"github.com/skiffhq/skiff/api"
)

func TestAdmitPod(t *testing.T) {
	alloc := api.ResourceList{api.ResourceCPU: q("2"), api.ResourceMemory: q("1Gi")}
	guaranteed := func(uid, cpu, mem string) *api.Pod {
		p := pod(uid, "")
		l := api.ResourceList{api.ResourceCPU: q(cpu), api.ResourceMemory: q(mem)}
		p.Spec.Containers[0].Resources = api.ResourceRequirements{Requests: l, Limits: l}
		return p
	}
	tolerant := pod("tolerant", "")
	tolerant.Spec.Tolerations = []api.Toleration{{Key: TaintMemoryPressure, Operator: "Exists", Effect: api.TaintEffectNoSchedule}}
	static := pod("static", "")
	static.Annotations = map[string]string{"skiff.io/config.source": "file"}
	running := []*api.Pod{guaranteed("r1", "1", "512Mi")}
	mem := []string{api.NodeMemoryPressure}
	disk := []string{api.NodeDiskPressure}
	tests := []struct {
		name    string
		pod     *api.Pod
		others  []*api.Pod
		conds   []string
		maxPods int
		reason  string // "" = admitted
	}{
		{"fits", guaranteed("p", "1", "512Mi"), running, nil, 110, ""},
		{"cpu", guaranteed("p", "1500m", "100Mi"), running, nil, 110, ReasonOutOfCPU},
		{"memory", guaranteed("p", "100m", "600Mi"), running, nil, 110, ReasonOutOfMemory},
		{"pods", pod("p", ""), running, nil, 1, ReasonOutOfPods},
		{"besteffort under memory pressure", pod("p", ""), nil, mem, 110, ReasonEvicted},
		{"burstable under memory pressure", pod("p", "10Mi"), nil, mem, 110, ""},
		{"besteffort tolerating memory pressure", tolerant, nil, mem, 110, ""},
		{"any pod under disk pressure", guaranteed("p", "1", "1Mi"), nil, disk, 110, ReasonEvicted},
		{"tolerant pod under disk and memory pressure", tolerant, nil, []string{api.NodeMemoryPressure, api.NodeDiskPressure}, 110, ReasonEvicted},
		{"static pod under disk pressure", static, nil, disk, 110, ""},
	}
	for _, tc := range tests {
		ok, reason, msg := admitPod(tc.pod, tc.others, tc.conds, alloc, tc.maxPods)
		if ok != (tc.reason == "") || reason != tc.reason || (!ok && msg == "") {
			t.Errorf("%s: admitPod = %v, %q, %q; want reason %q", tc.name, ok, reason, msg, tc.reason)
		}
	}
}

func TestManagerAdmitFollowsConditions(t *testing.T) {
	h := newHarness(t, nil)
	if ok, _, _ := h.m.Admit(pod("p", ""), nil); !ok {
		t.Fatal("Admit without pressure refused a pod")
	}
	h.stats.set(func(s *Summary) { s.NodeFS.Available = 10 * mi })
	h.sync()
	ok, reason, msg := h.m.Admit(pod("p", "10Mi"), nil)
	if ok || reason != ReasonEvicted || msg != "The node had condition: [DiskPressure]." {
		t.Errorf("Admit under DiskPressure = %v, %q, %q; want refused, Evicted, the condition", ok, reason, msg)
	}
}
