package eviction

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/api"
	apiresource "github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/clock"
)

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeStats serves a Summary the test sets, stamped with the fake clock.
type fakeStats struct {
	mu    sync.Mutex
	clock *clock.Fake
	s     Summary
	calls int
	// hook, when set, adjusts each reading (e.g. from the fake runtime).
	hook func(s *Summary)
}

func (f *fakeStats) Summary(ctx context.Context, pods []*api.Pod) (Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	s := f.s
	s.Pods = map[string]PodStats{}
	for k, v := range f.s.Pods {
		s.Pods[k] = v
	}
	if f.hook != nil {
		f.hook(&s)
	}
	s.Time = f.clock.Now().Add(time.Duration(f.calls) * time.Nanosecond)
	return s, nil
}

func (f *fakeStats) set(fn func(s *Summary)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.s)
}

// fakePods is a PodSource over a list of pods.
type fakePods struct {
	mu     sync.Mutex
	pods   []*api.Pod
	states map[string]kubelet.PodState
	kills  []kill
}

type kill struct {
	uid, reason, message string
	grace                int64
}

func (f *fakePods) Pods() []kubelet.PodInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []kubelet.PodInfo
	for _, p := range f.pods {
		out = append(out, kubelet.PodInfo{Pod: p, State: f.states[p.UID]})
	}
	return out
}

func (f *fakePods) KillPodWithStatus(uid string, grace int64, reason, message string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		if p.UID == uid {
			f.kills = append(f.kills, kill{uid, reason, message, grace})
			f.states[uid] = kubelet.PodTerminating
			return nil
		}
	}
	return fmt.Errorf("kill %s: %w", uid, kubelet.ErrNotFound)
}

// finish marks every terminating pod terminated.
func (f *fakePods) finish() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for uid, st := range f.states {
		if st == kubelet.PodTerminating {
			f.states[uid] = kubelet.PodTerminated
		}
	}
}

func (f *fakePods) killed() []kill {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]kill(nil), f.kills...)
}

// fakeRecorder records events as "type reason message".
type fakeRecorder struct {
	mu   sync.Mutex
	pod  []string
	node []string
}

func (r *fakeRecorder) Eventf(pod *api.Pod, eventType, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pod = append(r.pod, pod.Name+" "+reason+" "+fmt.Sprintf(format, args...))
}

func (r *fakeRecorder) NodeEventf(eventType, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.node = append(r.node, reason)
}

// harness is a Manager over fakes and a fake clock.
type harness struct {
	t     *testing.T
	clock *clock.Fake
	stats *fakeStats
	pods  *fakePods
	rt    *fake.Runtime
	rec   *fakeRecorder
	m     *Manager
	// changes counts OnConditionsChange calls.
	changes int
}

// newHarness builds a manager with flags (ParseConfig) on a node with
// 1 GiB of memory (400 MiB used), 10 GiB disks half free, 1000 inodes,
// PID max 1000 with 100 used.
func newHarness(t *testing.T, flags map[string]string) *harness {
	t.Helper()
	cfg, err := ParseConfig(flags)
	if err != nil {
		t.Fatalf("ParseConfig(%v) = %v", flags, err)
	}
	h := &harness{t: t, clock: clock.NewFake(t0), pods: &fakePods{states: map[string]kubelet.PodState{}}, rec: &fakeRecorder{}}
	h.rt = fake.New(h.clock)
	h.stats = &fakeStats{clock: h.clock, s: Summary{
		Memory:  MemoryStats{Capacity: gi, WorkingSet: 400 * mi},
		NodeFS:  FsStats{Capacity: 10 * gi, Available: 5 * gi, Inodes: 1000, InodesFree: 500},
		ImageFS: FsStats{Capacity: 10 * gi, Available: 5 * gi, Inodes: 1000, InodesFree: 500},
		PIDs:    PIDStats{Max: 1000, Running: 100},
		Pods:    map[string]PodStats{},
	}}
	h.m, err = New(cfg, Deps{
		Stats: h.stats, Pods: h.pods, Reclaimer: h.rt, Recorder: h.rec, Clock: h.clock,
		Allocatable: func() api.ResourceList {
			return api.ResourceList{api.ResourceCPU: q("2"), api.ResourceMemory: q("1Gi")}
		},
		OnConditionsChange: func() { h.changes++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// addPod adds a running pod with memory use (bytes) and the given
// memory request ("" for none).
func (h *harness) addPod(uid string, usage int64, request string, opts ...func(*api.Pod)) *api.Pod {
	p := pod(uid, request)
	for _, o := range opts {
		o(p)
	}
	h.pods.mu.Lock()
	h.pods.pods = append(h.pods.pods, p)
	h.pods.states[uid] = kubelet.PodSyncing
	h.pods.mu.Unlock()
	h.stats.set(func(s *Summary) { s.Pods[uid] = PodStats{MemoryWorkingSet: usage} })
	return p
}

func pod(uid, memRequest string) *api.Pod {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "pod-" + uid, Namespace: "default", UID: uid}}
	c := api.Container{Name: "c", Image: "busybox"}
	if memRequest != "" {
		c.Resources.Requests = api.ResourceList{api.ResourceMemory: q(memRequest)}
	}
	p.Spec.Containers = []api.Container{c}
	return p
}

func q(s string) apiresource.Quantity { return apiresource.MustParse(s) }

func withPriority(n int32) func(*api.Pod) { return func(p *api.Pod) { p.Spec.Priority = &n } }

// setAvailable sets the node's available memory.
func (h *harness) setAvailable(avail int64) {
	h.stats.set(func(s *Summary) { s.Memory.WorkingSet = s.Memory.Capacity - avail })
}

// sync runs one cycle and returns the UIDs evicted.
func (h *harness) sync() []string {
	h.t.Helper()
	ev, err := h.m.Synchronize(context.Background())
	if err != nil {
		h.t.Fatalf("Synchronize() = %v", err)
	}
	var out []string
	for _, p := range ev {
		out = append(out, p.UID)
	}
	return out
}

func (h *harness) conditions() []string {
	var out []string
	for _, c := range h.m.Conditions() {
		out = append(out, c.Type)
	}
	return out
}
