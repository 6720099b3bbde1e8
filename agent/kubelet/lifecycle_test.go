package kubelet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
)

var errTest = errors.New("test failure")

func ptr[T any](v T) *T { return &v }

func TestGracefulKillUsesGracePeriod(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "slow", "quick")
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
	h.rt.IgnoreSIGTERM("slow")
	h.send(config.ADD, pod)
	h.settle()

	del := *pod
	del.DeletionTimestamp = api.NewTimePtr(h.clock.Now())
	del.DeletionGracePeriodSeconds = ptr(int64(20))
	waiters := h.clock.Waiters()
	h.send(config.DELETE, &del)
	h.clock.BlockUntil(waiters + 1) // the stop of "slow" waits on the clock

	h.clock.Advance(19 * time.Second)
	if c, _ := h.newest("u1", "slow"); c.State != runtime.StateRunning {
		t.Fatalf("slow container state after 19 s = %s; want still running", c.State)
	}
	if got := h.status.terminatedCount("u1"); got != 0 {
		t.Fatalf("PodTerminated before the grace period ended")
	}
	h.advance(time.Second)
	for _, c := range h.rt.Calls() {
		if c.Method == fake.MethodStopContainer && c.Grace != 20*time.Second {
			t.Errorf("StopContainer(%s) grace = %v; want 20s (deletionGracePeriodSeconds)", c.Arg, c.Grace)
		}
	}
	if got := h.rt.CallCount(fake.MethodStopContainer, ""); got != 2 {
		t.Errorf("StopContainer calls = %d; want 2", got)
	}
	if got := h.status.terminatedCount("u1"); got != 1 {
		t.Fatalf("PodTerminated calls = %d; want 1", got)
	}
	if h.rt.HasSandbox("u1") || len(h.rt.ContainerIDs("u1", "slow")) != 0 {
		t.Error("containers or sandbox left after kill")
	}
	st := h.status.get("u1")
	if st.Phase != api.PodFailed {
		t.Errorf("phase after kill = %q; want Failed", st.Phase)
	}
	if cs := findStatus(st.ContainerStatuses, "slow"); cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 137 {
		t.Errorf("slow status = %+v; want terminated 137", cs.State)
	}

	// The same UID never runs again, even on an UPDATE without deletion.
	h.send(config.UPDATE, pod)
	h.advance(2 * time.Second)
	if got := h.rt.CallCount(fake.MethodCreateContainer, ""); got != 2 {
		t.Errorf("CreateContainer calls = %d after UPDATE of a terminated pod; want 2", got)
	}
	// REMOVE ends the worker, and housekeeping removes the directory.
	h.send(config.REMOVE, &del)
	h.settle()
	h.advance(2 * time.Second)
	if _, err := os.Stat(filepath.Join(h.dir, "default_pod-u1_u1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pod dir after removal: %v; want gone", err)
	}
	h.status.mu.Lock()
	removed := h.status.removed["u1"]
	h.status.mu.Unlock()
	if removed != 1 {
		t.Errorf("RemovePod calls = %d; want 1", removed)
	}
	if _, known := h.k.workers.state("u1"); known {
		t.Error("worker record kept after removal and housekeeping")
	}
}

func TestAdoptionAfterAgentRestart(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "app")
	h.send(config.ADD, pod)
	h.settle()
	h.exit("u1", "app", 1) // restart 1, so the count must survive
	h.settle()
	before := h.status.get("u1")
	h.stop()

	calls := len(h.rt.Calls())
	h.start()
	restored := *pod
	restored.Status = before
	h.send(config.RESTORE, &restored)
	h.advance(3 * time.Second)
	for _, c := range h.rt.Calls()[calls:] {
		switch c.Method {
		case fake.MethodCreateContainer, fake.MethodStartContainer, fake.MethodStopContainer, fake.MethodRemoveContainer, fake.MethodCreateSandbox:
			t.Errorf("adoption called %s(%s); want nothing restarted", c.Method, c.Arg)
		}
	}
	st := h.status.get("u1")
	cs := findStatus(st.ContainerStatuses, "app")
	if cs.RestartCount != 1 || cs.ContainerID != "containerd://"+runtime.ContainerID("u1", "app", 1) || cs.State.Running == nil {
		t.Errorf("adopted status = %+v; want restart 1, same ID, running", cs)
	}
	if !st.StartTime.Equal(before.StartTime.Time) {
		t.Errorf("startTime = %v; want kept %v", st.StartTime, before.StartTime)
	}
}

func TestHousekeepingKillsOrphansOnlyWhenSourcesReady(t *testing.T) {
	h := newHarness(t)
	h.send(config.ADD, mkPod("keep", "c"), mkPod("orphan", "c"))
	h.settle()
	h.stop()

	h.setReady(false)
	h.start()
	h.send(config.ADD, mkPod("keep", "c")) // the orphan's source has not spoken yet
	h.advance(4 * time.Second)
	if c, _ := h.newest("orphan", "c"); c.State != runtime.StateRunning {
		t.Fatalf("orphan killed before sources were ready (state %s)", c.State)
	}
	h.setReady(true)
	h.advance(2 * time.Second)
	if ids := h.rt.ContainerIDs("orphan", "c"); len(ids) != 0 || h.rt.HasSandbox("orphan") {
		t.Fatalf("orphan left: containers %v, sandbox %v", ids, h.rt.HasSandbox("orphan"))
	}
	for _, c := range h.rt.Calls() {
		if c.Method == fake.MethodStopContainer && c.Arg == runtime.ContainerID("orphan", "c", 0) && c.Grace != 2*time.Second {
			t.Errorf("orphan stop grace = %v; want 2s", c.Grace)
		}
	}
	if c, _ := h.newest("keep", "c"); c.State != runtime.StateRunning || c.RestartCount != 0 {
		t.Errorf("wanted pod disturbed: %+v", c)
	}
	h.advance(2 * time.Second)
	if _, err := os.Stat(filepath.Join(h.dir, "default_pod-orphan_orphan")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan dir: %v; want removed", err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "default_pod-keep_keep")); err != nil {
		t.Errorf("wanted pod dir: %v", err)
	}
	if got := h.status.terminatedCount("orphan"); got != 0 {
		t.Errorf("PodTerminated called for an orphan")
	}
}

func TestSpecChangeReplacesContainer(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "c")
	h.send(config.ADD, pod)
	h.settle()
	upd := *pod
	upd.Spec.Containers = []api.Container{{Name: "c", Image: "busybox:1.37"}}
	h.send(config.UPDATE, &upd)
	h.settle()
	c, _ := h.newest("u1", "c")
	if c.RestartCount != 1 || c.State != runtime.StateRunning || c.Image != "busybox:1.37" {
		t.Fatalf("after image change: %+v; want restart 1 on busybox:1.37", c)
	}
	if old, _, _ := h.rt.Container(runtime.ContainerID("u1", "c", 0)); old.State != runtime.StateExited {
		t.Errorf("old instance state = %s; want exited", old.State)
	}
}

func TestCreateContainerConfigError(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "c")
	pod.Spec.Containers[0].Env = []api.EnvVar{{Name: "PW", ValueFrom: &api.EnvVarSource{
		SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "db"}, Key: "password"}}}}
	h.send(config.ADD, pod)
	h.settle()
	cs := findStatus(h.status.get("u1").ContainerStatuses, "c")
	if waitingReasonOf(cs) != ReasonCreateContainerConfigError {
		t.Fatalf("waiting = %+v; want CreateContainerConfigError", cs.State)
	}
	h.objects.secrets["default/db"] = &api.Secret{Data: map[string][]byte{"password": []byte("s3cret")}}
	h.advance(10 * time.Second)
	c, ok := h.newest("u1", "c")
	if !ok || c.State != runtime.StateRunning {
		t.Fatalf("after the secret appeared: %+v %v; want running", c, ok)
	}
	_, cfg, _ := h.rt.Container(c.ID)
	if len(cfg.Env) != 1 || cfg.Env[0] != "PW=s3cret" {
		t.Errorf("env = %q; want [PW=s3cret]", cfg.Env)
	}
}

func TestImagePullSecretsAndPolicy(t *testing.T) {
	h := newHarness(t)
	h.objects.secrets["default/reg"] = &api.Secret{Type: secretTypeDockerConfigJSON, Data: map[string][]byte{
		".dockerconfigjson": []byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"dXNlcjpwYXNz"}}}`)}}
	pod := mkPod("u1", "c")
	pod.Spec.Containers[0].Image = "busybox" // no tag: Always
	pod.Spec.ImagePullSecrets = []api.LocalObjectReference{{Name: "reg"}, {Name: "missing"}}
	h.rt.AddImage("busybox")
	h.send(config.ADD, pod)
	h.settle()
	pulls := h.rt.Pulls()
	if len(pulls) != 1 {
		t.Fatalf("pulls = %d; want 1 (policy Always pulls a present image)", len(pulls))
	}
	want := runtime.RegistryAuth{Host: "docker.io", Username: "user", Password: "pass"}
	if len(pulls[0].Auth) != 1 || pulls[0].Auth[0] != want {
		t.Errorf("auth = %v; want [%v]", pulls[0].Auth, want)
	}
}

func TestPodsSnapshotAndKillPod(t *testing.T) {
	h := newHarness(t)
	h.send(config.ADD, mkPod("u1", "c"))
	h.settle()
	pods := h.k.Pods()
	if len(pods) != 1 || pods[0].Pod.UID != "u1" || pods[0].State != PodSyncing {
		t.Fatalf("Pods() = %+v; want u1 Syncing", pods)
	}
	if err := h.k.KillPod("nope", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("KillPod(unknown) = %v; want ErrNotFound", err)
	}
	if err := h.k.KillPod("u1", 5); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if pods := h.k.Pods(); pods[0].State != PodTerminated {
		t.Errorf("state after KillPod = %v; want Terminated", pods[0].State)
	}
	for _, c := range h.rt.Calls() {
		if c.Method == fake.MethodStopContainer && c.Grace != 5*time.Second {
			t.Errorf("StopContainer grace = %v; want 5s from KillPod", c.Grace)
		}
	}
}

// TestFinishedPodLosesItsVolumes: once a pod finished (here it exits
// with restartPolicy Never), its emptyDir goes at once, as the kubelet's
// SyncTerminatedPod tears volumes down, so a pod evicted for filling the
// disk frees it; the pod directory (logs) stays until the pod is deleted.
func TestFinishedPodLosesItsVolumes(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "app")
	pod.Spec.RestartPolicy = api.RestartPolicyNever
	pod.Spec.Volumes = []api.Volume{{Name: "scratch", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}}}
	h.send(config.ADD, pod)
	h.settle()
	empty := filepath.Join(volumes.PodDir(h.dir, pod), "volumes", "empty-dir", "scratch")
	if err := os.WriteFile(filepath.Join(empty, "fill"), make([]byte, 4096), 0o600); err != nil {
		t.Fatalf("write into the emptyDir: %v", err)
	}
	h.exit("u1", "app", 0)
	h.settle()
	if st := h.status.get("u1"); st.Phase != api.PodSucceeded {
		t.Fatalf("phase = %s; want Succeeded", st.Phase)
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Fatalf("the finished pod's emptyDir is still there (%v)", err)
	}
	if _, err := os.Stat(volumes.PodDir(h.dir, pod)); err != nil {
		t.Fatalf("the finished pod's directory went with its volumes: %v", err)
	}
}
