package kubelet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// fakeStatus records what the kubelet reports.
type fakeStatus struct {
	mu         sync.Mutex
	last       map[string]api.PodStatus
	history    map[string][]api.PodStatus
	count      map[string]int
	terminated map[string]int
	removed    map[string]int
}

func newFakeStatus() *fakeStatus {
	return &fakeStatus{last: map[string]api.PodStatus{}, history: map[string][]api.PodStatus{}, count: map[string]int{}, terminated: map[string]int{}, removed: map[string]int{}}
}

func (s *fakeStatus) SetPodStatus(pod *api.Pod, st api.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[pod.UID] = st
	s.history[pod.UID] = append(s.history[pod.UID], st)
	s.count[pod.UID]++
}
func (s *fakeStatus) PodTerminated(pod *api.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.terminated[pod.UID]++
}
func (s *fakeStatus) RemovePod(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removed[uid]++
}

func (s *fakeStatus) get(uid string) api.PodStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[uid]
}

// sawReason reports whether any status sent for uid had container name
// waiting with reason.
func (s *fakeStatus) sawReason(uid, name, reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.history[uid] {
		if waitingReasonOf(findStatus(st.ContainerStatuses, name)) == reason {
			return true
		}
	}
	return false
}

func (s *fakeStatus) terminatedCount(uid string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.terminated[uid]
}

// fakeObjects serves secrets and config maps from maps keyed "ns/name".
type fakeObjects struct {
	secrets    map[string]*api.Secret
	configMaps map[string]*api.ConfigMap
}

func (o *fakeObjects) GetSecret(ctx context.Context, ns, name string) (*api.Secret, error) {
	if s, ok := o.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("secret %s/%s: %w", ns, name, volumes.ErrObjectNotFound)
}

func (o *fakeObjects) GetConfigMap(ctx context.Context, ns, name string) (*api.ConfigMap, error) {
	if c, ok := o.configMaps[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, fmt.Errorf("configmap %s/%s: %w", ns, name, volumes.ErrObjectNotFound)
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// harness runs a Kubelet on a fake runtime and a fake clock.
type harness struct {
	t       *testing.T
	clock   *clock.Fake
	rt      *fake.Runtime
	status  *fakeStatus
	objects *fakeObjects
	dir     string
	ready   bool
	readyMu sync.Mutex
	k       *Kubelet
	// configure adjusts the Config of every Kubelet start makes.
	configure func(*Config)
	updates   chan config.PodUpdate
	cancel    context.CancelFunc
	done      chan error
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, nil)
}

// newAdmitHarness is newHarness with Config.Admit set to admit.
func newAdmitHarness(t *testing.T, admit func(pod *api.Pod, others []*api.Pod) (bool, string, string)) *harness {
	t.Helper()
	return newHarnessWith(t, func(c *Config) { c.Admit = admit })
}

// newHarnessWith is newHarness with configure applied to the Kubelet's
// Config before it starts (and at every restart).
func newHarnessWith(t *testing.T, configure func(*Config)) *harness {
	t.Helper()
	h := &harness{
		configure: configure,
		t:         t,
		clock:     clock.NewFake(t0),
		status:    newFakeStatus(),
		objects:   &fakeObjects{secrets: map[string]*api.Secret{}, configMaps: map[string]*api.ConfigMap{}},
		dir:       t.TempDir(),
		ready:     true,
	}
	h.rt = fake.New(h.clock)
	h.start()
	return h
}

// start runs a new Kubelet on the harness's runtime, clock and dir.
func (h *harness) start() {
	h.t.Helper()
	cfg := Config{
		NodeName: "node-1", PodsDir: h.dir, Runtime: h.rt, Status: h.status, Objects: h.objects,
		Clock:        h.clock,
		HostIP:       func() string { return "192.0.2.10" },
		PodIP:        func(uid string) string { return "10.42.0.7" },
		SourcesReady: func() bool { h.readyMu.Lock(); defer h.readyMu.Unlock(); return h.ready },
	}
	if h.configure != nil {
		h.configure(&cfg)
	}
	k, err := New(cfg)
	if err != nil {
		h.t.Fatalf("New() = %v", err)
	}
	h.k = k
	h.updates = make(chan config.PodUpdate)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	waiters := h.clock.Waiters()
	go func() { h.done <- k.Run(ctx, h.updates) }()
	h.clock.BlockUntil(waiters + 3) // sync, housekeeping and relist tickers
	h.t.Cleanup(h.stop)
}

// stop ends the Kubelet's Run and waits for it.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run() = %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Fatal("Run did not return after cancel")
	}
}

func (h *harness) setReady(v bool) {
	h.readyMu.Lock()
	defer h.readyMu.Unlock()
	h.ready = v
}

func (h *harness) send(op config.Op, pods ...*api.Pod) {
	h.t.Helper()
	h.sendFrom(config.SourceAPI, op, pods...)
}

// sendFrom is send from another source.
func (h *harness) sendFrom(source string, op config.Op, pods ...*api.Pod) {
	h.t.Helper()
	select {
	case h.updates <- config.PodUpdate{Op: op, Source: source, Pods: pods}:
	case <-time.After(10 * time.Second):
		h.t.Fatal("sync loop did not take the update")
	}
}

// settle drives the loop until nothing is pending: every PLEG event and
// tick handled, every worker idle, and a relist finds no change. Real time
// is only a deadline; fake time does not move.
func (h *harness) settle() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for stable := 0; stable < 2; {
		if time.Now().After(deadline) {
			h.t.Fatal("kubelet did not settle")
		}
		done := make(chan struct{})
		select {
		case h.k.flushes <- done:
			<-done
		case <-time.After(time.Until(deadline)):
			h.t.Fatal("sync loop did not take a flush")
		}
		for !h.k.workers.idle() {
			if time.Now().After(deadline) {
				h.t.Fatal("pod workers did not become idle")
			}
			time.Sleep(time.Millisecond) // polling real work with a deadline
		}
		if err := h.k.pleg.relist(context.Background()); err != nil {
			h.t.Fatalf("relist: %v", err)
		}
		if len(h.k.pleg.events) == 0 && h.k.workers.idle() {
			stable++
		} else {
			stable = 0
		}
	}
}

// advance steps the fake clock by d, then settles.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.settle()
}

// state returns the fake runtime's state of the newest instance of pod
// uid's container name, "" when there is none.
func (h *harness) newest(uid, name string) (runtime.ContainerStatus, bool) {
	ids := h.rt.ContainerIDs(uid, name)
	if len(ids) == 0 {
		return runtime.ContainerStatus{}, false
	}
	st, _, _ := h.rt.Container(ids[len(ids)-1])
	return st, true
}

func (h *harness) exit(uid, name string, code int32) {
	h.t.Helper()
	c, ok := h.newest(uid, name)
	if !ok {
		h.t.Fatalf("no container %s of pod %s", name, uid)
	}
	if err := h.rt.Exit(c.ID, code, false); err != nil {
		h.t.Fatalf("Exit(%s) = %v", c.ID, err)
	}
}

// mkPod returns a pod with the given app containers (image busybox:1.36).
func mkPod(uid string, containers ...string) *api.Pod {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "pod-" + uid, Namespace: "default", UID: uid}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, api.Container{Name: c, Image: "busybox:1.36"})
	}
	p.Spec.RestartPolicy = api.RestartPolicyAlways
	return p
}

func findStatus(list []api.ContainerStatus, name string) api.ContainerStatus {
	for _, cs := range list {
		if cs.Name == name {
			return cs
		}
	}
	return api.ContainerStatus{}
}

func condition(st api.PodStatus, typ string) string {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func waitingReasonOf(cs api.ContainerStatus) string {
	if cs.State.Waiting == nil {
		return ""
	}
	return cs.State.Waiting.Reason
}
