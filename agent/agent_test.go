package agent_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/agent/podclean"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/testenv"
)

// testAgent is a real agent (its own containerd, the busybox image
// side-loaded) joined to a real server.
type testAgent struct {
	t       *testing.T
	srv     *agenttest.Server
	cfg     agent.Config
	cancel  context.CancelFunc
	done    chan error
	running *agent.Agent
}

func startTestAgent(t *testing.T, srv *agenttest.Server, clk clock.Clock) *testAgent {
	t.Helper()
	return startTestAgentWith(t, srv, clk, nil)
}

// startTestAgentWith is startTestAgent with configure applied to the
// agent's Config.
func startTestAgentWith(t *testing.T, srv *agenttest.Server, clk clock.Clock, configure func(*agent.Config)) *testAgent {
	t.Helper()
	socket := testenv.StartContainerd(t)
	tar, _ := testenv.BusyboxImage(t)
	dataDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dataDir, "agent", "images"), 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(tar)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "agent", "images", "busybox.tar"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(srv.Info.JoinTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	seed := filepath.Base(filepath.Dir(dataDir)) + filepath.Base(dataDir)
	ta := &testAgent{t: t, srv: srv, cfg: agent.Config{
		Server: srv.Info.URL, Token: strings.TrimSpace(string(tok)), NodeName: "edge", DataDir: dataDir,
		Containerd: socket, CgroupRoot: "/skiff-test-" + seed, NodeIP: "127.0.0.1", Listen: "127.0.0.1:0",
		Clock: clk, Network: testNetwork(seed),
	}}
	if configure != nil {
		configure(&ta.cfg)
	}
	// Cleanups run last-in first-out: stop the agent, then remove what
	// its pods left (containers, network namespaces, pod cgroups), before
	// the data dir goes.
	t.Cleanup(func() { podclean.RemovePods(t, ta.cfg) })
	t.Cleanup(func() { uninstallNetwork(t, ta.cfg) })
	ta.start()
	t.Cleanup(ta.stop)
	return ta
}

// testNetwork gives a test agent its own bridge and nftables table (no
// overlay), so agents of tests running side by side do not meet.
func testNetwork(seed string) func(*network.Config) {
	sum := fnv.New32a()
	sum.Write([]byte(seed))
	id := fmt.Sprintf("%08x", sum.Sum32())
	return func(c *network.Config) {
		c.Bridge, c.Table, c.NoOverlay = "skt"+id, "skifftest"+id, true
		// In the real root namespace: no route for the service CIDR.
		c.ServiceCIDR = ""
	}
}

// uninstallNetwork removes the test agent's bridge, veths and table.
func uninstallNetwork(t *testing.T, cfg agent.Config) {
	ncfg := network.Config{NodeName: cfg.NodeName, StateDir: filepath.Join(cfg.DataDir, "agent", "network")}
	cfg.Network(&ncfg)
	nw, err := network.New(ncfg)
	if err != nil {
		t.Errorf("cleanup: network: %v", err)
		return
	}
	if err := nw.Uninstall(); err != nil {
		t.Errorf("cleanup: network: %v", err)
	}
	nw.Close()
}

func (ta *testAgent) start() {
	ta.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan *agent.Agent, 1)
	cfg := ta.cfg
	cfg.Ready = func(a *agent.Agent) { ready <- a }
	ta.done = make(chan error, 1)
	go func() { ta.done <- agent.Run(ctx, cfg) }()
	select {
	case ta.running = <-ready:
	case err := <-ta.done:
		cancel()
		ta.t.Fatalf("agent.Run: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		ta.t.Fatal("agent not ready in 30s")
	}
	ta.cancel = cancel
}

func (ta *testAgent) stop() {
	if ta.cancel == nil {
		return
	}
	ta.cancel()
	select {
	case err := <-ta.done:
		if err != nil {
			ta.t.Errorf("agent.Run returned %v", err)
		}
	case <-time.After(30 * time.Second):
		ta.t.Error("agent did not stop in 30s")
	}
	ta.cancel = nil
}

func busyboxPod(name, script string) *api.Pod {
	p := agenttest.Pod(name, "edge")
	p.Spec.Containers = []api.Container{{Name: "main", Image: "skiff.test/busybox:latest", ImagePullPolicy: api.PullIfNotPresent, Command: []string{"sh", "-c", script}}}
	return p
}

// waitPod polls the pod through the admin API until cond holds, for up
// to a minute (real containers start in real time).
func waitPod(t *testing.T, srv *agenttest.Server, name, what string, cond func(*api.Pod) bool) *api.Pod {
	t.Helper()
	deadline := time.Now().Add(testenv.Bound(60 * time.Second))
	var last *api.Pod
	for time.Now().Before(deadline) {
		obj, err := srv.Admin.Get(context.Background(), agenttest.Pods(), "default", name)
		if err == nil {
			last = obj.(*api.Pod)
			if cond(last) {
				return last
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pod %s: timed out waiting for %s; last status %+v", name, what, last.Status)
	return nil
}

func phase(p api.PodPhase) func(*api.Pod) bool {
	return func(pod *api.Pod) bool { return pod.Status.Phase == p }
}

func logsOf(t *testing.T, srv *agenttest.Server, name, container string) string {
	t.Helper()
	rc, err := srv.Admin.Logs(context.Background(), "default", name, client.LogOptions{Container: container})
	if err != nil {
		t.Fatalf("logs %s: %v", name, err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

func TestAgentRunsPods(t *testing.T) {
	srv := agenttest.StartServer(t)
	ta := startTestAgent(t, srv, nil)
	agenttest.Eventually(t, "node registered", ta.running.Registered)

	// Run and logs through the server's proxy.
	srv.CreatePod(busyboxPod("hello", "echo hello from skiff; sleep 3600"))
	hello := waitPod(t, srv, "hello", "Running with an IP", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning && p.Status.PodIP != "" })
	nodes, _ := api.LookupResource("nodes")
	obj, err := srv.Admin.Get(context.Background(), nodes, "", "edge")
	if err != nil {
		t.Fatal(err)
	}
	if _, cidr, err := net.ParseCIDR(obj.(*api.Node).Spec.PodCIDR); err != nil || !cidr.Contains(net.ParseIP(hello.Status.PodIP)) {
		t.Fatalf("pod IP %s not in the node's podCIDR %q (%v)", hello.Status.PodIP, obj.(*api.Node).Spec.PodCIDR, err)
	}
	agenttest.Eventually(t, "log line", func() bool { return strings.Contains(logsOf(t, srv, "hello", ""), "hello from skiff") })
	// The agent's events reach the server (describe pod shows them).
	evRes, _ := api.LookupResource("events")
	agenttest.Eventually(t, "Started event for hello", func() bool {
		list, _, err := srv.Admin.List(context.Background(), evRes, "default", client.ListOptions{})
		if err != nil {
			return false
		}
		for _, o := range list {
			if e := o.(*api.Event); e.InvolvedObject.Name == "hello" && e.Reason == "Started" && e.Source.Component == "skiff-agent" {
				return true
			}
		}
		return false
	})

	// Exit codes and reasons.
	fail := busyboxPod("fail", "echo failing; exit 3")
	fail.Spec.RestartPolicy = api.RestartPolicyNever
	srv.CreatePod(fail)
	p := waitPod(t, srv, "fail", "Failed", phase(api.PodFailed))
	if st := p.Status.ContainerStatuses[0].State.Terminated; st == nil || st.ExitCode != 3 || st.Reason != "Error" {
		t.Fatalf("fail: terminated %+v", st)
	}
	done := busyboxPod("done", "exit 0")
	done.Spec.RestartPolicy = api.RestartPolicyOnFailure
	srv.CreatePod(done)
	p = waitPod(t, srv, "done", "Succeeded", phase(api.PodSucceeded))
	if st := p.Status.ContainerStatuses[0].State.Terminated; st == nil || st.Reason != "Completed" {
		t.Fatalf("done: terminated %+v", st)
	}

	// Init containers run in order before the app, sharing an emptyDir.
	ini := busyboxPod("init", "cat /work/order; sleep 3600")
	ini.Spec.Volumes = []api.Volume{{Name: "work", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}}}
	mount := []api.VolumeMount{{Name: "work", MountPath: "/work"}}
	ini.Spec.Containers[0].VolumeMounts = mount
	ini.Spec.InitContainers = []api.Container{
		{Name: "first", Image: "skiff.test/busybox:latest", ImagePullPolicy: api.PullIfNotPresent, Command: []string{"sh", "-c", "echo first >> /work/order"}, VolumeMounts: mount},
		{Name: "second", Image: "skiff.test/busybox:latest", ImagePullPolicy: api.PullIfNotPresent, Command: []string{"sh", "-c", "echo second >> /work/order"}, VolumeMounts: mount},
	}
	srv.CreatePod(ini)
	waitPod(t, srv, "init", "Running", phase(api.PodRunning))
	agenttest.Eventually(t, "init order in log", func() bool { return logsOf(t, srv, "init", "main") == "first\nsecond\n" })

	// OOMKilled under a small memory limit.
	oom := busyboxPod("oom", "dd if=/dev/zero of=/dev/null bs=64M count=1")
	oom.Spec.RestartPolicy = api.RestartPolicyNever
	oom.Spec.Containers[0].Resources.Limits = api.ResourceList{api.ResourceMemory: resource.MustParse("16Mi")}
	srv.CreatePod(oom)
	p = waitPod(t, srv, "oom", "Failed", phase(api.PodFailed))
	if st := p.Status.ContainerStatuses[0].State.Terminated; st == nil || st.Reason != "OOMKilled" {
		t.Fatalf("oom: terminated %+v", st)
	}

	// Graceful delete: a container that exits on SIGTERM is gone at once,
	// well inside its 30 s grace period.
	term := busyboxPod("term", "trap 'exit 0' TERM; while true; do sleep 0.2; done")
	srv.CreatePod(term)
	waitPod(t, srv, "term", "Running", phase(api.PodRunning))
	start := time.Now()
	if err := srv.Admin.Delete(context.Background(), agenttest.Pods(), "default", "term", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	agenttest.Eventually(t, "term deleted", func() bool {
		_, err := srv.Admin.Get(context.Background(), agenttest.Pods(), "default", "term")
		return api.IsNotFound(err)
	})
	// 15 s (stretched under emulation, but always short of the 30 s
	// grace period a pod ignoring TERM would take).
	if d, limit := time.Since(start), min(testenv.Bound(15*time.Second), 29*time.Second); d > limit {
		t.Errorf("graceful delete of a TERM-handling pod took %v; want under %v", d, limit)
	}
}

func TestAgentRestartAndServerOutage(t *testing.T) {
	srv := agenttest.StartServer(t)
	ta := startTestAgent(t, srv, nil)
	srv.CreatePod(busyboxPod("steady", "sleep 3600"))
	before := waitPod(t, srv, "steady", "Running", phase(api.PodRunning)).Status.ContainerStatuses[0]

	// An agent restart adopts the running container: same ID, no restart.
	ta.stop()
	ta.start()
	time.Sleep(2 * time.Second) // let a restarted agent act if it wrongly would
	after := waitPod(t, srv, "steady", "Running", phase(api.PodRunning)).Status.ContainerStatuses[0]
	if after.ContainerID != before.ContainerID || after.RestartCount != 0 {
		t.Fatalf("after agent restart: %s restarts %d; before %s", after.ContainerID, after.RestartCount, before.ContainerID)
	}

	// A pod that crashes, then the server goes away: the agent keeps
	// restarting it, and a static pod starts with no server at all.
	srv.CreatePod(busyboxPod("crash", "sleep 1; exit 1"))
	waitPod(t, srv, "crash", "Running", phase(api.PodRunning))
	srv.Stop()
	manifest := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: static\nspec:\n  containers:\n  - name: main\n    image: skiff.test/busybox:latest\n    imagePullPolicy: IfNotPresent\n    command: [sleep, \"3600\"]\n"
	if err := os.WriteFile(filepath.Join(ta.cfg.DataDir, "agent", "pod-manifests", "static.yaml"), []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := ta.running.Runtime
	restarts := func(name string) (max int, running bool) {
		pods, err := rt.ListPods(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			if p.Name != name {
				continue
			}
			for _, c := range p.Containers {
				if c.RestartCount > max {
					max = c.RestartCount
				}
				running = running || c.State == "running"
			}
		}
		return max, running
	}
	deadline := time.Now().Add(testenv.Bound(60 * time.Second))
	for {
		n, _ := restarts("crash")
		_, staticUp := restarts("static-edge")
		if n >= 1 && staticUp {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with the server away: crash restarted %d times, static pod running %v", n, staticUp)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, up := restarts("steady"); !up {
		t.Fatal("steady stopped while the server was away")
	}
	// The server is back: the crash loop and the mirror pod show up.
	srv.Start()
	waitPod(t, srv, "crash", "restarts reported", func(p *api.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	waitPod(t, srv, "static-edge", "mirror pod Running", phase(api.PodRunning))
}

// TestAgentCrashLoopBackOff runs the agent on a fake clock pumped ahead
// of real time and checks the restart delays: 10 s, then 20 s.
func TestAgentCrashLoopBackOff(t *testing.T) {
	srv := agenttest.StartServer(t)
	clk := clock.NewFake(time.Now())
	ta := startTestAgent(t, srv, clk)
	srv.CreatePod(busyboxPod("loop", "exit 1"))
	var mu sync.Mutex
	var starts []time.Time
	seen := map[string]bool{}
	agenttest.Pump(t, clk, 100*time.Millisecond, "three restarts", func() bool {
		pods, _ := ta.running.Runtime.ListPods(context.Background())
		for _, p := range pods {
			for _, c := range p.Containers {
				if p.Name == "loop" && !c.StartedAt.IsZero() && !seen[c.ID] {
					seen[c.ID] = true
					mu.Lock()
					starts = append(starts, c.StartedAt)
					mu.Unlock()
				}
			}
		}
		return len(starts) >= 4
	})
	// starts[0] is the first run; the first crash restarts at once, then
	// the back-off doubles from 10 s.
	gaps := []time.Duration{starts[2].Sub(starts[1]), starts[3].Sub(starts[2])}
	if gaps[0] < 10*time.Second || gaps[1] < 20*time.Second || gaps[1] > 40*time.Second {
		t.Fatalf("restart gaps %v; want ≥10s then 20–40s", gaps)
	}
	// Inside the 40 s back-off that follows, the status says so (the
	// status manager batches on the same clock, so keep it moving).
	agenttest.Pump(t, clk, 10*time.Millisecond, "CrashLoopBackOff reported", func() bool {
		obj, err := srv.Admin.Get(context.Background(), agenttest.Pods(), "default", "loop")
		if err != nil {
			return false
		}
		st := obj.(*api.Pod).Status.ContainerStatuses
		if len(st) != 1 {
			return false
		}
		cs := st[0]
		return cs.RestartCount >= 3 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" && cs.LastTerminationState.Terminated != nil
	})
}
