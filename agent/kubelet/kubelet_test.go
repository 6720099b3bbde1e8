package kubelet

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
)

func TestStartsPodAndReportsRunning(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "web", "sidecar")
	pod.Spec.Containers[0].Resources = api.ResourceRequirements{
		Limits:   api.ResourceList{api.ResourceCPU: resource.MustParse("500m"), api.ResourceMemory: resource.MustParse("64Mi")},
		Requests: api.ResourceList{api.ResourceCPU: resource.MustParse("500m"), api.ResourceMemory: resource.MustParse("64Mi")},
	}
	h.send(config.ADD, pod)
	h.settle()

	for _, name := range []string{"web", "sidecar"} {
		c, ok := h.newest("u1", name)
		if !ok || c.State != runtime.StateRunning || c.RestartCount != 0 {
			t.Fatalf("container %s = %+v, %v; want running restart 0", name, c, ok)
		}
	}
	_, cfg, _ := h.rt.Container(runtime.ContainerID("u1", "web", 0))
	if cfg.CPULimitMilli != 500 || cfg.MemoryLimit != 64<<20 || cfg.CPURequestMilli != 500 {
		t.Errorf("web resources = cpu %d/%d mem %d; want 500/500 and 64Mi", cfg.CPURequestMilli, cfg.CPULimitMilli, cfg.MemoryLimit)
	}
	if want := h.dir + "/default_pod-u1_u1/web/0.log"; cfg.LogPath != want {
		t.Errorf("LogPath = %q; want %q", cfg.LogPath, want)
	}
	if sb, ok := h.rt.SandboxConfig("u1"); !ok || sb.QOSClass != api.PodQOSBurstable {
		t.Errorf("sandbox = %+v, %v; want a Burstable sandbox", sb, ok)
	}
	st := h.status.get("u1")
	if st.Phase != api.PodRunning {
		t.Errorf("phase = %q; want Running", st.Phase)
	}
	for _, typ := range []string{api.PodScheduled, api.PodInitialized, api.ContainersReady, api.PodReady} {
		if got := condition(st, typ); got != api.ConditionTrue {
			t.Errorf("condition %s = %q; want True", typ, got)
		}
	}
	web := findStatus(st.ContainerStatuses, "web")
	if web.State.Running == nil || !web.Ready || web.ContainerID != "containerd://"+runtime.ContainerID("u1", "web", 0) || web.ImageID == "" {
		t.Errorf("web status = %+v; want running, ready, containerd:// ID, image ID", web)
	}
	if st.PodIP != "10.42.0.7" || st.HostIP != "192.0.2.10" || st.StartTime == nil || st.QOSClass != api.PodQOSBurstable {
		t.Errorf("status IPs/start/qos = %q %q %v %q", st.PodIP, st.HostIP, st.StartTime, st.QOSClass)
	}
	if got := h.rt.CallCount(fake.MethodCreateSandbox, "u1"); got != 1 {
		t.Errorf("CreateSandbox calls = %d; want 1", got)
	}
}

func TestInitContainersRunInOrder(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "app")
	pod.Spec.InitContainers = []api.Container{{Name: "init-a", Image: "busybox:1.36"}, {Name: "init-b", Image: "busybox:1.36"}}
	h.send(config.ADD, pod)
	h.settle()

	assertOnly := func(step string, want ...string) {
		t.Helper()
		for _, name := range []string{"init-a", "init-b", "app"} {
			_, exists := h.newest("u1", name)
			should := false
			for _, w := range want {
				should = should || w == name
			}
			if exists != should {
				t.Fatalf("%s: container %s exists = %v; want %v", step, name, exists, should)
			}
		}
	}
	assertOnly("start", "init-a")
	st := h.status.get("u1")
	if st.Phase != api.PodPending || condition(st, api.PodInitialized) != api.ConditionFalse {
		t.Fatalf("phase %q initialized %q; want Pending, False", st.Phase, condition(st, api.PodInitialized))
	}
	if got := waitingReasonOf(findStatus(st.ContainerStatuses, "app")); got != ReasonPodInitializing {
		t.Errorf("app waiting = %q; want %q", got, ReasonPodInitializing)
	}

	h.exit("u1", "init-a", 1) // fails: restartPolicy Always reruns it
	h.settle()
	if c, _ := h.newest("u1", "init-a"); c.RestartCount != 1 || c.State != runtime.StateRunning {
		t.Fatalf("init-a after failure = %+v; want restart 1 running", c)
	}
	assertOnly("init-a restarted", "init-a")

	h.exit("u1", "init-a", 0)
	h.settle()
	assertOnly("init-a done", "init-a", "init-b")
	h.exit("u1", "init-b", 0)
	h.settle()
	assertOnly("init-b done", "init-a", "init-b", "app")
	st = h.status.get("u1")
	if st.Phase != api.PodRunning || condition(st, api.PodInitialized) != api.ConditionTrue {
		t.Fatalf("phase %q initialized %q; want Running, True", st.Phase, condition(st, api.PodInitialized))
	}
	if cs := findStatus(st.InitContainerStatuses, "init-b"); cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
		t.Errorf("init-b status = %+v; want terminated Completed", cs)
	}
}

func TestInitContainerFailureWithNeverFailsPod(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "app")
	pod.Spec.RestartPolicy = api.RestartPolicyNever
	pod.Spec.InitContainers = []api.Container{{Name: "init", Image: "busybox:1.36"}}
	h.send(config.ADD, pod)
	h.settle()
	h.exit("u1", "init", 3)
	h.settle()
	if _, ok := h.newest("u1", "app"); ok {
		t.Fatal("app started after its init container failed with restartPolicy Never")
	}
	if c, _ := h.newest("u1", "init"); c.RestartCount != 0 {
		t.Errorf("init restarted (restart %d) under restartPolicy Never", c.RestartCount)
	}
	if st := h.status.get("u1"); st.Phase != api.PodFailed {
		t.Errorf("phase = %q; want Failed", st.Phase)
	}
	if got := h.status.terminatedCount("u1"); got != 1 {
		t.Errorf("PodTerminated calls = %d; want 1", got)
	}
}

func TestRestartPolicies(t *testing.T) {
	tests := []struct {
		policy      api.RestartPolicy
		code        int32
		wantRestart bool
		wantPhase   api.PodPhase
	}{
		{api.RestartPolicyAlways, 0, true, api.PodRunning},
		{api.RestartPolicyAlways, 1, true, api.PodRunning},
		{api.RestartPolicyOnFailure, 0, false, api.PodSucceeded},
		{api.RestartPolicyOnFailure, 2, true, api.PodRunning},
		{api.RestartPolicyNever, 0, false, api.PodSucceeded},
		{api.RestartPolicyNever, 137, false, api.PodFailed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/exit%d", tt.policy, tt.code), func(t *testing.T) {
			h := newHarness(t)
			pod := mkPod("u1", "c")
			pod.Spec.RestartPolicy = tt.policy
			h.send(config.ADD, pod)
			h.settle()
			h.exit("u1", "c", tt.code)
			h.settle()
			c, _ := h.newest("u1", "c")
			if restarted := c.RestartCount == 1 && c.State == runtime.StateRunning; restarted != tt.wantRestart {
				t.Errorf("policy %s exit %d: restarted = %v; want %v", tt.policy, tt.code, restarted, tt.wantRestart)
			}
			st := h.status.get("u1")
			if st.Phase != tt.wantPhase {
				t.Errorf("policy %s exit %d: phase = %q; want %q", tt.policy, tt.code, st.Phase, tt.wantPhase)
			}
			terminal := tt.wantPhase == api.PodSucceeded || tt.wantPhase == api.PodFailed
			if terminal {
				if got := h.status.terminatedCount("u1"); got != 1 {
					t.Errorf("PodTerminated calls = %d; want 1", got)
				}
				if _, ok := h.newest("u1", "c"); !ok {
					t.Error("a finished pod lost its exited container before deletion")
				}
				cs := findStatus(st.ContainerStatuses, "c")
				if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != tt.code {
					t.Errorf("container state = %+v; want terminated with %d", cs.State, tt.code)
				}
			}
		})
	}
}

// TestServerTerminalPhaseStopsPod: when the server marks a running pod
// Failed (a node that was lost comes back), the agent stops it and never
// starts it again.
func TestServerTerminalPhaseStopsPod(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u9", "app")
	h.send(config.ADD, pod)
	h.settle()
	if c, _ := h.newest("u9", "app"); c.State != runtime.StateRunning {
		t.Fatalf("app = %s; want running", c.State)
	}
	failed := *pod
	failed.Status = api.PodStatus{Phase: api.PodFailed, Reason: "NodeLost", Message: "node was lost"}
	h.send(config.RECONCILE, &failed)
	h.advance(3 * time.Second)
	if c, _ := h.newest("u9", "app"); c.State == runtime.StateRunning {
		t.Fatal("app still running after the server marked the pod Failed")
	}
	if got := h.status.terminatedCount("u9"); got != 1 {
		t.Fatalf("PodTerminated calls = %d; want 1", got)
	}
	h.advance(30 * time.Second)
	if got := h.rt.CallCount(fake.MethodCreateContainer, ""); got != 1 {
		t.Fatalf("CreateContainer calls = %d; want 1 (never started again)", got)
	}
}

// TestFinishedPodKeepsContainersOnReconcile: the agent's own Succeeded
// status coming back from the server (RECONCILE) does not remove the
// finished pod's containers (their logs stay readable).
func TestFinishedPodKeepsContainersOnReconcile(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u10", "job")
	pod.Spec.RestartPolicy = api.RestartPolicyNever
	h.send(config.ADD, pod)
	h.settle()
	h.exit("u10", "job", 0)
	h.advance(2 * time.Second)
	if st := h.status.get("u10"); st.Phase != api.PodSucceeded {
		t.Fatalf("phase %q; want Succeeded", st.Phase)
	}
	done := *pod
	done.Status = h.status.get("u10")
	h.send(config.RECONCILE, &done)
	h.advance(3 * time.Second)
	if ids := h.rt.ContainerIDs("u10", "job"); len(ids) != 1 {
		t.Fatalf("containers of the finished pod after RECONCILE: %v; want the exited one kept", ids)
	}
	if got := h.status.terminatedCount("u10"); got != 1 {
		t.Fatalf("PodTerminated calls = %d; want 1", got)
	}
}

// recordedEvents collects the kubelet's events.
type recordedEvents struct {
	mu      sync.Mutex
	reasons []string
}

func (r *recordedEvents) Eventf(pod *api.Pod, typ, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, typ+"/"+reason)
}

func (r *recordedEvents) has(want string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.reasons, want)
}

func TestEventsOnStartBackOffAndKill(t *testing.T) {
	ev := &recordedEvents{}
	h := newHarnessWith(t, func(c *Config) { c.Events = ev })
	pod := mkPod("u11", "app")
	h.send(config.ADD, pod)
	h.settle()
	for _, want := range []string{"Normal/Created", "Normal/Started"} {
		if !ev.has(want) {
			t.Errorf("no %s event; got %v", want, ev.reasons)
		}
	}
	h.exit("u11", "app", 1)
	h.advance(2 * time.Second) // restarted at once
	h.exit("u11", "app", 1)
	h.advance(2 * time.Second) // now in back-off
	if !ev.has("Warning/BackOff") {
		t.Errorf("no BackOff event after two crashes; got %v", ev.reasons)
	}
	del := *pod
	del.DeletionTimestamp = api.NewTimePtr(h.clock.Now())
	h.send(config.DELETE, &del)
	h.advance(40 * time.Second)
	if h.status.terminatedCount("u11") != 1 {
		t.Fatal("pod not terminated after delete")
	}
}
