package fleet

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	agentusage "github.com/skiffhq/skiff/agent/usage"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/testenv"
	serverusage "github.com/skiffhq/skiff/server/usage"
)

// skiffBin is the binary TestMain builds once for the run.
var skiffBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if _, err := RaiseFileLimit(4096); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
	}
	dir, err := os.MkdirTemp("", "skiff-fleet-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if skiffBin, err = BuildSkiff(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 1
	}
	return m.Run()
}

// TestFleetSmall runs 150 simulated agents through every phase of Run
// against the real binary: all join and heartbeat, pods bound to them
// arrive and are reported Running, a Deployment of 300 replicas with a
// DoNotSchedule spread by zone is placed evenly over the 4 zones and
// runs, and after each of two server restarts every agent heartbeats
// again and receives a new pod. Every agent also holds the real agent's
// other exchanges (Full): its Node, Service and EndpointSlice watches
// and its tunnel, all on its one connection. Nothing here asserts speed.
func TestFleetSmall(t *testing.T) {
	const agents, replicas = 150, 300
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var progress testenv.SyncBuffer
	rep, err := Run(ctx, Config{Bin: skiffBin, Dir: t.TempDir(), Agents: agents, Zones: 4, StartRate: 500,
		Window: 2 * time.Second, Pods: agents, BindRate: 500, Replicas: replicas, Restarts: 2, Timeout: 3 * time.Minute, Usage: time.Second, Full: true,
		Settle: time.Second, CollectBetween: true, HoldOwnGC: true, HoldHeadroom: 1 << 30, Progress: &progress})
	t.Log("\n" + rep.Summary())
	if err != nil {
		t.Fatal(err)
	}
	// No collection of the simulator's own, which stalls every simulated
	// agent at once, precedes the settle and the steady window; one
	// precedes the phases after.
	out := progress.String()
	held := strings.Index(out, "own collector held for the settle and the steady window, without a collection first")
	window := strings.Index(out, "steady 2s:")
	if held < 0 || window < 0 || held > window || strings.Contains(out, "own collection before the settle") || strings.Contains(out, "own collection before the steady") {
		t.Errorf("the simulator's collector held at %d, the steady window's report at %d; want it held first, without a collection, in\n%s", held, window, out)
	}
	if !strings.Contains(out, "own collection before the Deployment") {
		t.Errorf("no collection of the simulator's own before the Deployment in\n%s", out)
	}
	if rep.Replicas != replicas || rep.Pods != agents || len(rep.Restarts) != 2 {
		t.Fatalf("report %+v; want every phase run", rep)
	}
	total := 0
	for z := range 4 {
		n := rep.ZoneCounts[fmt.Sprintf("zone-%d", z)]
		total += n
		// 300 over 4 zones with maxSkew 1: exactly 75 each.
		if n != replicas/4 {
			t.Errorf("zone-%d holds %d replicas; want %d (per zone %v)", z, n, replicas/4, rep.ZoneCounts)
		}
	}
	if total != replicas {
		t.Errorf("%d replicas placed in zones; want %d", total, replicas)
	}
	// Reports every second since each agent joined, read after the
	// Deployment phase: every node has two of them, a rate.
	if rep.NodeMetrics != agents {
		t.Errorf("the server measured usage for %d nodes; want all %d (the agents' usage reports)", rep.NodeMetrics, agents)
	}
	// Every agent's tunnel is open, as a stream of its one connection.
	if rep.Tunnels != agents || rep.Steady.Sockets < agents || rep.Steady.Sockets > agents+10 {
		t.Errorf("in the steady window the server holds %d tunnels and %d sockets for %d agents; want a tunnel each, on the agent's one connection", rep.Tunnels, rep.Steady.Sockets, agents)
	}
	// An agent's pod, Service and EndpointSlice watches share one stream.
	if rep.SharedStreams != agents || rep.SingleStreams != 0 || rep.Watches != 5*agents {
		t.Errorf("in the steady window the server holds %d shared and %d single watch streams carrying %d watches for %d agents; want a shared stream each, carrying 3 watches, the peer feed and the tunnel",
			rep.SharedStreams, rep.SingleStreams, rep.Watches, agents)
	}
	// Every agent's Node watch handed over at least its first list, and
	// its Service watcher at least one snapshot.
	if rep.NodeSets < agents || rep.Snapshots < agents {
		t.Errorf("the agents' sinks got %d node sets and %d service snapshots; want at least one each per agent", rep.NodeSets, rep.Snapshots)
	}
}

// TestAgentRunningStatus: the simulated kubelet reports every container
// running and ready, and a stopped pod's containers terminated.
func TestAgentRunningStatus(t *testing.T) {
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "a", Image: "x:1"}, {Name: "b", Image: "y:2"}}}}
	now := time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)
	st := runningStatus(p, "127.1.1.1", now)
	if st.Phase != api.PodRunning || len(st.ContainerStatuses) != 2 || st.PodIP != "127.1.1.1" {
		t.Fatalf("running status %+v", st)
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready || cs.State.Running == nil {
			t.Errorf("container %s: %+v; want running and ready", cs.Name, cs)
		}
	}
	stopped := stoppedStatus(p, now)
	for _, cs := range stopped.ContainerStatuses {
		if cs.Ready || cs.State.Terminated == nil {
			t.Errorf("stopped container %s: %+v; want terminated, not ready", cs.Name, cs)
		}
	}
}

// TestSourceIPsDistinct: every agent of a 100,000 fleet has its own
// loopback source address, never 127.0.0.1.
func TestSourceIPsDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := range 100000 {
		ip := SourceIP(i)
		if !ip.IsLoopback() || ip.String() == "127.0.0.1" || seen[ip.String()] {
			t.Fatalf("SourceIP(%d) = %v: not a fresh loopback address", i, ip)
		}
		seen[ip.String()] = true
	}
}

// TestAgentUsageReport: the simulated reading makes a report the server
// accepts, with the agent's pods and their containers, and CPU counters
// that grow, so the server can compute rates from two of them.
func TestAgentUsageReport(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC))
	a := NewAgent(AgentConfig{Name: "fleet-00001", Clock: clk})
	p := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: api.PodSpec{NodeName: "fleet-00001", Containers: []api.Container{{Name: "a", Image: "x:1"}, {Name: "b", Image: "y:2"}}}}
	a.pods[p.UID] = p
	build := func() api.UsageReport {
		s, pods, ok := a.Latest()
		if !ok {
			t.Fatal("Latest = not ok; want a reading")
		}
		return agentusage.Build(s, pods, a.PodDetails(context.Background(), pods))
	}
	first := build()
	clk.Advance(15 * time.Second)
	second := build()
	if err := serverusage.ValidateReport(&second); err != nil {
		t.Fatalf("ValidateReport = %v", err)
	}
	if len(second.Pods) != 1 || second.Pods[0].UID != "u1" || len(second.Pods[0].Containers) != 2 {
		t.Fatalf("report pods = %+v; want web with its 2 containers", second.Pods)
	}
	if second.Node.CPUUsageNanos <= first.Node.CPUUsageNanos || second.Pods[0].CPUUsageNanos <= first.Pods[0].CPUUsageNanos {
		t.Errorf("CPU counters %d -> %d (node), %d -> %d (pod); want them growing", first.Node.CPUUsageNanos, second.Node.CPUUsageNanos,
			first.Pods[0].CPUUsageNanos, second.Pods[0].CPUUsageNanos)
	}
}
