package containerd

import (
	"reflect"
	"testing"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// TestIntegrationPodStatusMatchesListPodsRealContainerd: PodStatus of one
// pod is what ListPods lists for it — a running and an exited container,
// a sandbox alone — and nil for a pod the runtime holds nothing of.
func TestIntegrationPodStatusMatchesListPodsRealContainerd(t *testing.T) {
	h := newHarness(t)
	a := h.sandbox(false, api.PodQOSBurstable, 0)
	b := h.sandbox(false, api.PodQOSBestEffort, 0)
	run := h.run(h.config(a, "run", "sleep 3600"))
	exit := h.run(h.config(a, "exit", "exit 3"))
	h.waitState(exit, runtime.StateExited)
	h.waitState(run, runtime.StateRunning)

	pods, err := h.rt.ListPods(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]runtime.PodStatus{}
	for _, p := range pods {
		listed[p.UID] = p
	}
	for _, uid := range []string{a.PodUID, b.PodUID} {
		got, err := h.rt.PodStatus(h.ctx, uid)
		if err != nil {
			t.Fatalf("PodStatus(%s): %v", uid, err)
		}
		want, ok := listed[uid]
		if !ok || got == nil {
			t.Fatalf("pod %s: listed %v, PodStatus %+v; want both", uid, ok, got)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("PodStatus(%s) = %+v\nListPods lists %+v", uid, *got, want)
		}
	}
	if got := listed[a.PodUID]; len(got.Containers) != 2 || got.Containers[0].State != runtime.StateExited ||
		got.Containers[0].ExitCode != 3 || got.Containers[1].State != runtime.StateRunning || got.Sandbox == nil || got.Sandbox.NetNSPath == "" {
		t.Errorf("pod a = %+v; want exited (3) and running containers and its sandbox", got)
	}
	if got := listed[b.PodUID]; len(got.Containers) != 0 || got.Sandbox == nil {
		t.Errorf("pod b = %+v; want its sandbox alone", got)
	}
	if got, err := h.rt.PodStatus(h.ctx, "no-such-pod"); err != nil || got != nil {
		t.Errorf("PodStatus(no-such-pod) = %+v, %v; want nil, nil", got, err)
	}
	if _, err := h.rt.PodStatus(h.ctx, "../x"); err == nil {
		t.Error("PodStatus(../x) = nil error; want the invalid uid refused")
	}
}
