package eviction

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/runtime/containerd"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
)

// realStatus records the statuses a real kubelet reports.
type realStatus struct {
	mu   sync.Mutex
	last map[string]api.PodStatus
}

func (s *realStatus) SetPodStatus(pod *api.Pod, st api.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[pod.UID] = st
}
func (s *realStatus) PodTerminated(pod *api.Pod) {}
func (s *realStatus) RemovePod(uid string)       {}

func (s *realStatus) get(uid string) api.PodStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[uid]
}

// realEnv is a real containerd with busybox, a containerd runtime on a
// cgroup root of the test's own and a kubelet running on it.
type realEnv struct {
	t       testing.TB
	ctx     context.Context
	rt      *containerd.Runtime
	k       *kubelet.Kubelet
	status  *realStatus
	podsDir string
	updates chan config.PodUpdate
}

var envSeq atomic.Int64

// newRealEnv starts containerd, the runtime and a kubelet whose pods
// live in podsDir ("" for a temporary directory) and that asks admit.
func newRealEnv(t testing.TB, podsDir string, admit func(*api.Pod, []*api.Pod) (bool, string, string)) *realEnv {
	t.Helper()
	testenv.RequireBinaries(t)
	data := t.TempDir()
	if podsDir == "" {
		podsDir = t.TempDir()
	}
	cgRoot := fmt.Sprintf("/skiff-ev-%d-%d", os.Getpid(), envSeq.Add(1))
	t.Cleanup(func() { testenv.RemoveCgroupRoot(t, cgRoot) })
	socket := testenv.StartContainerd(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rt, err := containerd.New(ctx, containerd.Config{Socket: socket, DataDir: data, CgroupRoot: cgRoot, Snapshotter: testenv.Snapshotter()})
	if err != nil {
		t.Fatalf("containerd.New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	tarPath, _ := testenv.BusyboxImage(t)
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := rt.ImportImages(ctx, f); err != nil {
		t.Fatalf("ImportImages: %v", err)
	}
	e := &realEnv{t: t, ctx: ctx, rt: rt, status: &realStatus{last: map[string]api.PodStatus{}}, podsDir: podsDir, updates: make(chan config.PodUpdate)}
	e.k, err = kubelet.New(kubelet.Config{NodeName: "node-1", PodsDir: podsDir, Runtime: rt, Status: e.status, Admit: admit,
		SyncPeriod: 100 * time.Millisecond, RelistPeriod: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	kctx, kcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.k.Run(kctx, e.updates) }()
	t.Cleanup(func() {
		// remove every pod (containers, sandboxes) before the daemon goes
		var pods []*api.Pod
		for _, p := range e.k.Pods() {
			pods = append(pods, p.Pod)
		}
		select {
		case e.updates <- config.PodUpdate{Op: config.REMOVE, Source: config.SourceAPI, Pods: pods}:
		case <-time.After(10 * time.Second):
		}
		e.eventually("pods removed", 30*time.Second, func() bool {
			left, err := rt.ListPods(ctx)
			return err != nil || len(left) == 0
		})
		kcancel()
		<-done
		unmountUnder(filepath.Join(data, "netns"))
	})
	return e
}

func unmountUnder(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		_ = unix.Unmount(filepath.Join(dir, e.Name()), unix.MNT_DETACH)
	}
}

// add sends pods to the kubelet.
func (e *realEnv) add(pods ...*api.Pod) {
	e.t.Helper()
	select {
	case e.updates <- config.PodUpdate{Op: config.ADD, Source: config.SourceAPI, Pods: pods}:
	case <-time.After(10 * time.Second):
		e.t.Fatal("the kubelet did not take the update")
	}
}

// eventually polls cond (real I/O) until it holds or the deadline.
func (e *realEnv) eventually(what string, d time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(testenv.Bound(d))
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling real containers, bounded by the deadline
	}
}

func (e *realEnv) running(uid string) bool {
	st := e.status.get(uid)
	return st.Phase == api.PodRunning && len(st.ContainerStatuses) > 0 && st.ContainerStatuses[0].State.Running != nil
}

// realPod is a busybox pod running script.
func realPod(uid, script string) *api.Pod {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "pod-" + uid, Namespace: "default", UID: uid}}
	p.Spec.RestartPolicy = api.RestartPolicyAlways
	grace := int64(1) // sh as PID 1 ignores SIGTERM: do not wait 30 s at cleanup
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers = []api.Container{{Name: "c", Image: testenv.BusyboxRef, ImagePullPolicy: api.PullNever, Command: []string{"sh", "-c", script}}}
	return p
}

func guaranteedPod(uid string) *api.Pod {
	p := realPod(uid, "sleep 3600")
	// 500m: under emulation runc itself starts the container inside
	// its CPU quota, and 100m made that take half a minute.
	l := api.ResourceList{api.ResourceCPU: q("500m"), api.ResourceMemory: q("32Mi")}
	p.Spec.Containers[0].Resources = api.ResourceRequirements{Requests: l, Limits: l}
	return p
}

// memoryEater holds about 128 MiB (a doubled awk string) and sleeps.
const memoryEater = `awk 'BEGIN { s = "x"; while (length(s) < 134217728) s = s s; system("sleep 3600") }'`
