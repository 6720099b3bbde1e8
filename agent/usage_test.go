package agent_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/promtext"
)

// TestAgentReportsUsageRealContainerd: a real agent on real containerd
// measures a CPU-bound pod from its cgroups and reports it; the server
// serves it as metrics.k8s.io PodMetrics and NodeMetrics.
func TestAgentReportsUsageRealContainerd(t *testing.T) {
	srv := agenttest.StartServer(t)
	ta := startTestAgentWith(t, srv, nil, func(c *agent.Config) { c.UsageInterval = time.Second })
	agenttest.Eventually(t, "node registered", ta.running.Registered)
	// A busy loop capped at 200m by its limit, holding 8 MiB in a shell
	// variable.
	p := busyboxPod("burn", `x=$(head -c 8388608 /dev/zero | tr '\0' a); while :; do :; done`)
	p.Spec.Containers[0].Resources.Limits = api.ResourceList{api.ResourceCPU: resource.MustParse("200m"), api.ResourceMemory: resource.MustParse("64Mi")}
	srv.CreatePod(p)
	waitPod(t, srv, "burn", "Running", phase(api.PodRunning))

	var pm api.PodMetrics
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := srv.Admin.DoJSON(context.Background(), http.MethodGet, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/burn", nil, &pm)
		if err == nil && len(pm.Containers) == 1 {
			cpu := pm.Containers[0].Usage[api.ResourceCPU]
			mem := pm.Containers[0].Usage[api.ResourceMemory]
			// The shell's 8 MiB string is built under a 200m limit: the
			// working set (pipe buffers, the shell's growing read
			// buffer) passes 8 MiB before the string's pages are all
			// resident, so wait for the agent's report to show them too
			// (a loaded CI box once read RSS 7.3 MiB here).
			rep, ok := ta.running.Usage()
			built := ok && len(rep.Pods) == 1 && rep.Pods[0].MemoryRSS >= 8<<20
			if cpu.MilliValue() >= 100 && mem.Value() >= 8<<20 && built {
				if cpu.MilliValue() > 260 {
					t.Fatalf("burn uses %s CPU; its limit is 200m", cpu.String())
				}
				break
			}
		}
		if time.Now().After(deadline) {
			rep, _ := ta.running.Usage()
			t.Fatalf("no PodMetrics for burn with ≥100m CPU and ≥8Mi memory in 60s; last %+v (%v); agent's last report %+v", pm, err, rep)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if pm.Containers[0].Name != "main" || pm.Window.Duration <= 0 {
		t.Errorf("PodMetrics = %+v; want container main over a positive window", pm)
	}
	var nm api.NodeMetrics
	if err := srv.Admin.DoJSON(context.Background(), http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes/edge", nil, &nm); err != nil {
		t.Fatal(err)
	}
	if cpu := nm.Usage[api.ResourceCPU]; cpu.MilliValue() < 100 {
		t.Errorf("node edge CPU = %s; want at least the pod's 100m", cpu.String())
	}
	rep, ok := ta.running.Usage()
	if !ok || len(rep.Pods) != 1 {
		t.Fatalf("agent's last report = %+v; want the burn pod", rep)
	}
	pod := rep.Pods[0]
	if pod.Network == nil {
		t.Error("the report has no network counters for burn (read from its netns)")
	}
	if pod.MemoryRSS < 8<<20 || pod.MemoryWorkingSet < pod.MemoryRSS/2 {
		t.Errorf("burn memory: RSS %d, working set %d; want RSS ≥ 8 MiB", pod.MemoryRSS, pod.MemoryWorkingSet)
	}
	if rep.Node.FsCapacity == 0 || rep.Node.FsAvailable == 0 {
		t.Errorf("node filesystem = %d/%d; want the data dir's", rep.Node.FsAvailable, rep.Node.FsCapacity)
	}

	// The agent's own /metrics, relayed by the server over the tunnel.
	resp, err := srv.Admin.Do(context.Background(), http.MethodGet, "/api/v1/nodes/edge/proxy/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `container_cpu_usage_seconds_total{namespace="default",pod="burn",container="main"} `) ||
		!strings.Contains(string(body), `container_memory_working_set_bytes{namespace="default",pod="burn",container="main"} `) {
		t.Errorf("agent /metrics lacks burn's container figures:\n%s", body)
	}
	if err := promtext.Check(body); err != nil {
		t.Errorf("agent /metrics fails the exposition check: %v", err)
	}
	// Another node's credential may not read this agent's metrics.
	if _, err := srv.NodeClient("hostile").Do(context.Background(), http.MethodGet, "/api/v1/nodes/edge/proxy/metrics", nil); !api.IsForbidden(err) {
		t.Errorf("node credential reading /proxy/metrics: %v; want 403", err)
	}
}
