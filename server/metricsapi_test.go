package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// report is a simulated agent's usage report: cpu in CPU-seconds.
func report(at time.Time, nodeCPU float64, pods ...api.PodUsage) string {
	rep := api.UsageReport{Time: at, Node: api.NodeUsage{CPUUsageNanos: uint64(nodeCPU * 1e9), MemoryWorkingSet: 512 << 20, MemoryCapacity: 1 << 30}, Pods: pods}
	b, _ := json.Marshal(rep)
	return string(b)
}

func podUsage(name, uid string, cpu float64, mem uint64) api.PodUsage {
	return api.PodUsage{Namespace: "default", Name: name, UID: uid, CPUUsageNanos: uint64(cpu * 1e9), MemoryWorkingSet: mem,
		Containers: []api.ContainerUsage{{Name: "app", CPUUsageNanos: uint64(cpu * 1e9), MemoryWorkingSet: mem}}}
}

// TestMetricsAPIFromSimulatedNodes: two simulated nodes push reports
// through the real server; NodeMetrics and PodMetrics are served from
// them, with rates over the window between reports, no store write per
// report, and node credentials confined to their own node.
func TestMetricsAPIFromSimulatedNodes(t *testing.T) {
	clk := clock.NewFake(time.Now())
	h := startHarness(t, "", clk)
	admin := h.adminToken()
	creds := map[string]string{}
	for _, n := range []string{"edge-1", "edge-2"} {
		code, cred := h.join(h.joinToken(), n, "")
		if code != http.StatusOK {
			t.Fatalf("join %s = %d", n, code)
		}
		creds[n] = cred
		h.mustDo(http.MethodPost, "/api/v1/nodes", admin, fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":{"zone":%q}}}`, n, n), http.StatusCreated)
	}
	h.mustDo(http.MethodPost, "/api/v1/namespaces/default/pods", admin, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"busybox"}]}}`, http.StatusCreated)
	var webPod api.Pod
	json.Unmarshal(h.mustDo(http.MethodGet, "/api/v1/namespaces/default/pods/web", admin, "", http.StatusOK), &webPod)

	// Before any report: the API answers, with nothing in it.
	var nl api.NodeMetricsList
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes", admin, "", http.StatusOK), &nl)
	if nl.Kind != "NodeMetricsList" || len(nl.Items) != 0 {
		t.Fatalf("node metrics before reports = %+v; want an empty NodeMetricsList", nl)
	}
	t0 := clk.Now().UTC()
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", creds["edge-1"], report(t0, 100, podUsage("web", webPod.UID, 10, 64<<20), podUsage("db", "uid-db", 5, 32<<20)), http.StatusNoContent)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/stats", creds["edge-2"], report(t0, 50), http.StatusNoContent)
	revision := func() string {
		var l api.NodeList
		json.Unmarshal(h.mustDo(http.MethodGet, "/api/v1/nodes", admin, "", http.StatusOK), &l)
		return l.ResourceVersion
	}
	clk.Advance(15 * time.Second)
	t1 := clk.Now().UTC()
	// The scheduler and the node IPAM write in the background (the pod
	// is unschedulable, the nodes get pod CIDRs, and the clock step
	// retries): wait until the store is quiet, then count.
	rv := revision()
	for stable, start := 0, time.Now(); stable < 5 && time.Since(start) < 10*time.Second; {
		time.Sleep(100 * time.Millisecond)
		if got := revision(); got == rv {
			stable++
		} else {
			rv, stable = got, 0
		}
	}
	// 1.5 CPU-seconds in 15 s is 100m; 3 CPU-seconds is 200m.
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", creds["edge-1"], report(t1, 103, podUsage("web", webPod.UID, 11.5, 80<<20), podUsage("db", "uid-db", 5.75, 32<<20)), http.StatusNoContent)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/stats", creds["edge-2"], report(t1, 50.15), http.StatusNoContent)
	if got := revision(); got != rv {
		t.Errorf("usage reports wrote to the store: revision %s → %s", rv, got)
	}

	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes", admin, "", http.StatusOK), &nl)
	if len(nl.Items) != 2 || nl.Items[0].Name != "edge-1" {
		t.Fatalf("node metrics = %+v; want edge-1 and edge-2", nl.Items)
	}
	n1 := nl.Items[0]
	if cpu := n1.Usage[api.ResourceCPU]; cpu.MilliValue() != 200 || n1.Window.Duration != 15*time.Second {
		t.Errorf("edge-1 cpu = %s over %s; want 200m over 15s", cpu.String(), n1.Window.Duration)
	}
	if mem := n1.Usage[api.ResourceMemory]; mem.Value() != 512<<20 {
		t.Errorf("edge-1 memory = %s; want 512Mi", mem.String())
	}
	var one api.NodeMetrics
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes/edge-2", admin, "", http.StatusOK), &one)
	if cpu := one.Usage[api.ResourceCPU]; cpu.MilliValue() != 10 {
		t.Errorf("edge-2 cpu = %s; want 10m", cpu.String())
	}
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=zone%3Dedge-2", admin, "", http.StatusOK), &nl)
	if len(nl.Items) != 1 || nl.Items[0].Name != "edge-2" {
		t.Errorf("node metrics zone=edge-2 = %+v; want edge-2 only", nl.Items)
	}

	var pl api.PodMetricsList
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", admin, "", http.StatusOK), &pl)
	if len(pl.Items) != 2 {
		t.Fatalf("pod metrics = %+v; want web and db", pl.Items)
	}
	var web api.PodMetrics
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web", admin, "", http.StatusOK), &web)
	if len(web.Containers) != 1 || web.Containers[0].Name != "app" {
		t.Fatalf("web metrics = %+v; want container app", web)
	}
	if cpu, mem := web.Containers[0].Usage[api.ResourceCPU], web.Containers[0].Usage[api.ResourceMemory]; cpu.MilliValue() != 100 || mem.Value() != 80<<20 {
		t.Errorf("web/app usage = %s, %s; want 100m, 80Mi", cpu.String(), mem.String())
	}
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=app%3Dweb", admin, "", http.StatusOK), &pl)
	if len(pl.Items) != 1 || pl.Items[0].Name != "web" {
		t.Errorf("pod metrics app=web = %+v; want web only", pl.Items)
	}
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/pods", admin, "", http.StatusOK), &pl)
	if len(pl.Items) != 2 {
		t.Errorf("pod metrics in all namespaces = %d; want 2", len(pl.Items))
	}
	h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/namespaces/other/pods/web", admin, "", http.StatusNotFound)
	h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes?labelSelector=%3D%3D", admin, "", http.StatusBadRequest)

	// Discovery lists the group, read-only, for kubectl top.
	var rl struct {
		Resources []struct {
			Name  string   `json:"name"`
			Kind  string   `json:"kind"`
			Verbs []string `json:"verbs"`
		} `json:"resources"`
	}
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1", admin, "", http.StatusOK), &rl)
	if len(rl.Resources) != 2 || rl.Resources[0].Kind != "NodeMetrics" || strings.Join(rl.Resources[0].Verbs, ",") != "get,list" {
		t.Errorf("discovery of metrics.k8s.io/v1beta1 = %+v; want nodes and pods, get and list", rl.Resources)
	}

	// Stale reports are not served.
	clk.Advance(3 * time.Minute)
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes", admin, "", http.StatusOK), &nl)
	if len(nl.Items) != 0 {
		t.Errorf("node metrics 3 min after the last report = %d items; want none", len(nl.Items))
	}
}

// TestMetricsAPIHostileNode: what a node credential may not do.
func TestMetricsAPIHostileNode(t *testing.T) {
	clk := clock.NewFake(time.Now())
	h := startHarness(t, "", clk)
	admin := h.adminToken()
	creds := h.joinNodes("edge-1", "edge-2")
	for i := 0; i < 2; i++ {
		at := clk.Now().UTC()
		h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", creds["edge-1"], report(at, float64(i), podUsage("a", "uid-a", float64(i), 1<<20)), http.StatusNoContent)
		h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/stats", creds["edge-2"], report(at, float64(i), podUsage("b", "uid-b", float64(i), 1<<20)), http.StatusNoContent)
		clk.Advance(15 * time.Second)
	}
	e1 := creds["edge-1"]
	// Reporting for another node, or junk.
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/stats", e1, report(clk.Now(), 9), http.StatusForbidden)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", "", report(clk.Now(), 9), http.StatusUnauthorized)
	for _, bad := range []string{`{`, `{"time":"2026-01-01T00:00:00Z","bogus":1}`, `{"node":{}}`,
		`{"time":"2026-01-01T00:00:00Z","pods":[{"name":"x"}]}`, `{"time":"2026-01-01T00:00:00Z"} {}`} {
		h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", e1, bad, http.StatusBadRequest)
	}
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", e1, `{"pad":"`+strings.Repeat("x", maxReportBytes)+`"}`, http.StatusRequestEntityTooLarge)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-9/stats", admin, report(clk.Now(), 1), http.StatusNotFound)
	// Reading: its own node only, and its own pods only.
	h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes/edge-2", e1, "", http.StatusForbidden)
	h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes/edge-1", e1, "", http.StatusOK)
	var nl api.NodeMetricsList
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes", e1, "", http.StatusOK), &nl)
	if len(nl.Items) != 1 || nl.Items[0].Name != "edge-1" {
		t.Errorf("edge-1 listing node metrics sees %+v; want itself only", nl.Items)
	}
	var pl api.PodMetricsList
	json.Unmarshal(h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/pods", e1, "", http.StatusOK), &pl)
	if len(pl.Items) != 1 || pl.Items[0].Name != "a" {
		t.Errorf("edge-1 listing pod metrics sees %+v; want its pod a only", pl.Items)
	}
	h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/b", e1, "", http.StatusNotFound)
	h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes", "", "", http.StatusUnauthorized)
	// No writes on a read-only API.
	if code, _ := h.do(http.MethodDelete, "/apis/metrics.k8s.io/v1beta1/nodes/edge-1", admin, ""); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE node metrics = %d; want 404 or 405", code)
	}
	h.mustDo(http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes/edge-1", admin, "", http.StatusOK)
}

// joinNodes joins each node and creates its Node (as an admin), and
// returns the nodes' credentials by name.
func (h *harness) joinNodes(names ...string) map[string]string {
	creds := map[string]string{}
	for _, n := range names {
		_, creds[n] = h.join(h.joinToken(), n, "")
		h.mustDo(http.MethodPost, "/api/v1/nodes", h.adminToken(), fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q}}`, n), http.StatusCreated)
	}
	return creds
}
