package kubectl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// postReport sends a simulated agent's usage report for node through
// kubectl create --raw (the admin may report for any node).
func (c *cluster) postReport(t *testing.T, node string, rep api.UsageReport) {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c.ok(t, "create", "--raw", "/api/v1/skiff/nodes/"+node+"/stats", "-f", f)
}

// TestTop runs kubectl top nodes and kubectl top pods --containers
// against usage a simulated node pushed: the figures are the rates over
// the window between its two reports.
func TestTop(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	node := "top-" + ns
	c.stdinOK(t, nodeYAML(node), "create", "-f", "-")
	c.ok(t, "patch", "node", node, "--subresource=status", "--type=merge", "-p", `{"status":{"allocatable":{"cpu":"2","memory":"1Gi"},"capacity":{"cpu":"2","memory":"1Gi"}}}`)
	c.stdinOK(t, podYAML(ns, "web", node), "create", "-f", "-")
	var pod api.Pod
	if err := json.Unmarshal([]byte(c.ok(t, "get", "pod", "web", "-n", ns, "-o", "json")), &pod); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now().UTC().Truncate(time.Second)
	t0 := t1.Add(-15 * time.Second)
	mk := func(at time.Time, cpuSeconds float64) api.UsageReport {
		n := uint64(cpuSeconds * 1e9)
		return api.UsageReport{Time: at,
			Node: api.NodeUsage{CPUUsageNanos: 4 * n, MemoryWorkingSet: 300 << 20, MemoryCapacity: 1 << 30},
			Pods: []api.PodUsage{{Namespace: ns, Name: "web", UID: pod.UID, CPUUsageNanos: n, MemoryWorkingSet: 48 << 20,
				Containers: []api.ContainerUsage{{Name: pod.Spec.Containers[0].Name, CPUUsageNanos: n, MemoryWorkingSet: 48 << 20}}}}}
	}
	c.postReport(t, node, mk(t0, 10))
	c.postReport(t, node, mk(t1, 11.5)) // 1.5 s of CPU in 15 s: 100m; node 400m

	out := c.ok(t, "top", "node", node)
	if got, want := header(out), "NAME CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%)"; got != want {
		t.Errorf("top node header = %q; want %q", got, want)
	}
	if r, want := rows(out), node+" 400m 20% 300Mi 29%"; len(r) != 1 || r[0] != want {
		t.Errorf("top node rows = %q; want [%q]", r, want)
	}
	out = c.ok(t, "top", "pods", "-n", ns, "--containers")
	if got, want := header(out), "POD NAME CPU(cores) MEMORY(bytes)"; got != want {
		t.Errorf("top pods --containers header = %q; want %q", got, want)
	}
	want := fmt.Sprintf("web %s 100m 48Mi", pod.Spec.Containers[0].Name)
	if r := rows(out); len(r) != 1 || r[0] != want {
		t.Errorf("top pods --containers rows = %q; want [%q]", r, want)
	}
	out = c.ok(t, "top", "pod", "web", "-n", ns)
	if r := rows(out); len(r) != 1 || r[0] != "web 100m 48Mi" {
		t.Errorf("top pod web rows = %q; want [web 100m 48Mi]", r)
	}
}
