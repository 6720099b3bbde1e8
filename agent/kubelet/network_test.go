package kubelet

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/prober"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/api"
)

// fakeNetwork hands out one address per pod and records what it was asked.
type fakeNetwork struct {
	rt  *fake.Runtime
	mu  sync.Mutex
	ips map[string]string
	// setUps records "uid netnsPath"; teardowns records uid and whether
	// the sandbox still existed.
	setUps    []string
	teardowns []string
	fail      error
	live      [][]string
	reconcErr error // what Reconcile returns
}

func (n *fakeNetwork) SetUpPod(ctx context.Context, uid, netnsPath string, pod *api.Pod) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.setUps = append(n.setUps, uid+" "+netnsPath)
	if n.fail != nil {
		return "", n.fail
	}
	n.ips[uid] = "10.42.0.9"
	return n.ips[uid], nil
}

func (n *fakeNetwork) TearDownPod(ctx context.Context, uid string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	sandbox := "without-sandbox"
	if n.rt.HasSandbox(uid) {
		sandbox = "with-sandbox"
	}
	n.teardowns = append(n.teardowns, uid+" "+sandbox)
	delete(n.ips, uid)
	return nil
}

func (n *fakeNetwork) PodIP(uid string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ips[uid]
}

func (n *fakeNetwork) Reconcile(ctx context.Context, live []string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.live = append(n.live, live)
	return n.reconcErr
}

func (n *fakeNetwork) snapshot() (setUps, teardowns []string, reconciles int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.setUps...), append([]string(nil), n.teardowns...), len(n.live)
}

func TestNetworkSetUpTearDownAndEtcFiles(t *testing.T) {
	net := &fakeNetwork{ips: map[string]string{}}
	h := newHarnessWith(t, func(c *Config) {
		c.Network, c.PodIP = net, nil
		c.ResolvConf = writeTemp(t, "nameserver 127.0.0.53\nnameserver 192.0.2.53\nsearch example.org\n")
	})
	net.rt = h.rt
	net.mu.Lock()
	net.fail = errTest
	net.mu.Unlock()
	pod := mkPod("u1", "app")
	h.send(config.ADD, pod)
	h.settle()
	if _, ok := h.newest("u1", "app"); ok {
		t.Fatal("container started although the pod network failed")
	}
	net.mu.Lock()
	net.fail = nil
	net.mu.Unlock()
	h.advance(10 * time.Second) // ErrorRetry: the set-up is retried on the existing sandbox
	setUps, _, _ := net.snapshot()
	if len(setUps) < 2 {
		t.Fatalf("SetUpPod calls = %q; want a failed one and a retry", setUps)
	}
	for _, s := range setUps {
		if s != "u1 /run/netns/skiff-u1" {
			t.Fatalf("SetUpPod call %q; want u1 with its netns", s)
		}
	}
	h.advance(10 * time.Second)
	if again, _, _ := net.snapshot(); len(again) != len(setUps) {
		t.Fatalf("SetUpPod called again (%d -> %d) once the pod had its IP", len(setUps), len(again))
	}
	c, ok := h.newest("u1", "app")
	if !ok {
		t.Fatal("container not started after the network came up")
	}
	if st := h.status.get("u1"); st.PodIP != "10.42.0.9" {
		t.Fatalf("podIP = %q; want the network's 10.42.0.9", st.PodIP)
	}
	_, cfg, _ := h.rt.Container(c.ID)
	mounted := map[string]string{}
	for _, m := range cfg.Mounts {
		mounted[m.ContainerPath] = m.HostPath
	}
	hosts, err := os.ReadFile(mounted["/etc/hosts"])
	if err != nil || !strings.Contains(string(hosts), "10.42.0.9\t"+pod.Name+"\n") || !strings.Contains(string(hosts), "127.0.0.1\tlocalhost") {
		t.Fatalf("/etc/hosts = %q, %v; want localhost and the pod's IP and name", hosts, err)
	}
	resolv, err := os.ReadFile(mounted["/etc/resolv.conf"])
	if err != nil || strings.Contains(string(resolv), "127.0.0.53") || !strings.Contains(string(resolv), "nameserver 192.0.2.53") {
		t.Fatalf("/etc/resolv.conf = %q, %v; want the host's without loopback nameservers", resolv, err)
	}
	h.advance(2 * time.Second) // housekeeping reconciles with the live pods
	if _, _, n := net.snapshot(); n == 0 {
		t.Fatal("housekeeping never called Reconcile")
	}
	net.mu.Lock()
	last := net.live[len(net.live)-1]
	net.mu.Unlock()
	if len(last) != 1 || last[0] != "u1" {
		t.Fatalf("Reconcile live = %v; want [u1]", last)
	}

	del := *pod
	del.DeletionTimestamp = api.NewTimePtr(h.clock.Now())
	del.DeletionGracePeriodSeconds = ptr(int64(0))
	h.send(config.DELETE, &del)
	h.settle()
	if _, teardowns, _ := net.snapshot(); len(teardowns) != 1 || teardowns[0] != "u1 with-sandbox" {
		t.Fatalf("TearDownPod calls = %q; want one for u1, before the sandbox went", teardowns)
	}
	if h.rt.HasSandbox("u1") {
		t.Fatal("sandbox left after delete")
	}

	hostPod := mkPod("u2", "app")
	hostPod.Spec.HostNetwork = true
	h.send(config.ADD, hostPod)
	h.settle()
	setUps, _, _ = net.snapshot()
	for _, s := range setUps {
		if strings.HasPrefix(s, "u2 ") {
			t.Fatal("SetUpPod called for a hostNetwork pod")
		}
	}
	c2, _ := h.newest("u2", "app")
	_, cfg2, _ := h.rt.Container(c2.ID)
	for _, m := range cfg2.Mounts {
		if m.ContainerPath == "/etc/hosts" {
			t.Fatal("hostNetwork pod got a pod /etc/hosts")
		}
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "resolv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return f.Name()
}

// fakeProber answers verdicts from maps the test sets.
type fakeProber struct {
	mu       sync.Mutex
	notReady map[string]bool // container ID -> not ready
	failed   map[string]bool // container ID -> liveness failed
	removed  []string
}

func (p *fakeProber) UpdatePod(pod *api.Pod, running []prober.Container) {}
func (p *fakeProber) RemovePod(uid string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removed = append(p.removed, uid)
}
func (p *fakeProber) Ready(uid, name, id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.notReady[id]
}
func (p *fakeProber) Started(uid, name, id string) bool { return true }
func (p *fakeProber) LivenessFailed(uid, name, id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed[id]
}

func (p *fakeProber) set(m map[string]bool, id string, v bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m[id] = v
}

func TestReadinessDrivesReadyAndLivenessRestarts(t *testing.T) {
	pr := &fakeProber{notReady: map[string]bool{}, failed: map[string]bool{}}
	results := make(chan ProbeResult, 1)
	h := newHarnessWith(t, func(c *Config) { c.Prober, c.ProbeResults = pr, results })
	pod := mkPod("u1", "app")
	h.send(config.ADD, pod)
	h.settle()
	c, _ := h.newest("u1", "app")
	pr.set(pr.notReady, c.ID, true)
	results <- ProbeResult{PodUID: "u1", Container: "app"}
	h.settle()
	st := h.status.get("u1")
	if cs := findStatus(st.ContainerStatuses, "app"); cs.Ready || condition(st, api.PodReady) != api.ConditionFalse || condition(st, api.ContainersReady) != api.ConditionFalse {
		t.Fatalf("not-ready container: ready=%v, Ready=%s; want false, False", cs.Ready, condition(st, api.PodReady))
	}
	pr.set(pr.notReady, c.ID, false)
	results <- ProbeResult{PodUID: "u1", Container: "app"}
	h.settle()
	st = h.status.get("u1")
	if cs := findStatus(st.ContainerStatuses, "app"); !cs.Ready || condition(st, api.PodReady) != api.ConditionTrue {
		t.Fatalf("ready container: ready=%v, Ready=%s; want true, True", cs.Ready, condition(st, api.PodReady))
	}

	pr.set(pr.failed, c.ID, true)
	results <- ProbeResult{PodUID: "u1", Container: "app"}
	h.settle()
	if got := h.rt.CallCount(fake.MethodStopContainer, c.ID); got != 1 {
		t.Fatalf("StopContainer(%s) calls = %d; want 1 after the liveness failure", c.ID, got)
	}
	h.advance(10 * time.Second) // past the crash-loop back-off
	h.advance(10 * time.Second)
	n, _ := h.newest("u1", "app")
	if n.ID == c.ID || n.RestartCount != 1 {
		t.Fatalf("newest instance = %s restart %d; want a new instance with restartCount 1", n.ID, n.RestartCount)
	}
	if cs := findStatus(h.status.get("u1").ContainerStatuses, "app"); cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil {
		t.Fatalf("status = %+v; want restartCount 1 with the killed instance as lastState", cs)
	}
}

// TestSandboxCutShortIsCompleted: an agent killed inside CreateSandbox
// leaves a sandbox record without cgroup or network namespace. The next
// agent must finish the sandbox and set up its network before any
// container starts, never start one in the half-made sandbox (it would
// run outside the pod's cgroup, in a network namespace of its own with
// no network).
func TestSandboxCutShortIsCompleted(t *testing.T) {
	net := &fakeNetwork{ips: map[string]string{}}
	h := newHarnessWith(t, func(c *Config) { c.Network, c.PodIP = net, nil })
	net.rt = h.rt
	pod := mkPod("u1", "app")
	h.rt.CutSandboxShort(sandboxConfig(pod))
	net.mu.Lock()
	net.ips["u1"] = "10.42.0.7" // its address was persisted, the veth never made
	net.mu.Unlock()
	h.send(config.ADD, pod)
	h.settle()
	if n := h.rt.CallCount(fake.MethodCreateSandbox, "u1"); n != 1 {
		t.Fatalf("CreateSandbox called %d times for the cut-short sandbox; want 1", n)
	}
	setUps, _, _ := net.snapshot()
	if len(setUps) != 1 || setUps[0] != "u1 /run/netns/skiff-u1" {
		t.Fatalf("SetUpPod calls = %q; want one, in the completed sandbox's netns", setUps)
	}
	c, ok := h.newest("u1", "app")
	if !ok {
		t.Fatal("container not started once the sandbox was complete")
	}
	_, cfg, _ := h.rt.Container(c.ID)
	if cfg.Sandbox.CgroupParent == "" || cfg.Sandbox.NetNSPath != "/run/netns/skiff-u1" {
		t.Fatalf("container started in sandbox %+v; want the completed one", cfg.Sandbox)
	}
	// A complete sandbox is left alone at the next syncs.
	h.advance(30 * time.Second)
	if n := h.rt.CallCount(fake.MethodCreateSandbox, "u1"); n != 1 {
		t.Fatalf("CreateSandbox called %d times; want it left alone once complete", n)
	}
}

// TestNetworkReconcileOnChangeAndEveryResync: housekeeping (every 2 s)
// calls Reconcile when the live set changes, otherwise once every
// NetworkResync, and at every housekeeping after a failed one.
func TestNetworkReconcileOnChangeAndEveryResync(t *testing.T) {
	net := &fakeNetwork{ips: map[string]string{}}
	h := newHarnessWith(t, func(c *Config) {
		c.Network, c.PodIP = net, nil
		c.NetworkResync = 20 * time.Second
	})
	net.rt = h.rt
	h.send(config.ADD, mkPod("u1", "app"))
	h.settle()
	h.advance(2 * time.Second)
	_, _, n0 := net.snapshot()
	if n0 == 0 {
		t.Fatal("no Reconcile after the first pod came")
	}
	for i := 0; i < 8; i++ { // 16 s, same live set
		h.advance(2 * time.Second)
	}
	if _, _, n := net.snapshot(); n != n0 {
		t.Fatalf("Reconcile calls %d -> %d within NetworkResync of an unchanged live set; want none", n0, n)
	}
	h.advance(4 * time.Second) // past 20 s
	_, _, n1 := net.snapshot()
	if n1 != n0+1 {
		t.Fatalf("Reconcile calls %d -> %d after NetworkResync; want one", n0, n1)
	}
	h.send(config.ADD, mkPod("u2", "app"))
	h.settle()
	h.advance(2 * time.Second)
	net.mu.Lock()
	last := net.live[len(net.live)-1]
	n2 := len(net.live)
	net.reconcErr = errTest
	net.mu.Unlock()
	if n2 <= n1 || len(last) != 2 {
		t.Fatalf("Reconcile calls %d -> %d, last live %v after a second pod; want a call with both", n1, n2, last)
	}
	h.advance(20 * time.Second) // a resync fails...
	_, _, n3 := net.snapshot()
	h.advance(2 * time.Second) // ...and is retried at the next housekeeping
	h.advance(2 * time.Second)
	if _, _, n := net.snapshot(); n != n3+2 {
		t.Fatalf("Reconcile calls %d -> %d in two housekeepings after a failure; want two retries", n3, n)
	}
}
