package usage

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/promtext"
)

type fakeEviction struct{}

func (fakeEviction) Evictions() map[string]uint64 {
	return map[string]uint64{"memory.available": 2, "nodefs.available": 1}
}
func (fakeEviction) Conditions() []api.NodeCondition {
	return []api.NodeCondition{{Type: "MemoryPressure", Status: api.ConditionTrue}}
}

// TestMetricsHandlerExposition: the agent's /metrics has the cAdvisor
// names with the report's figures, eviction counts, process figures, and
// passes the exposition check.
func TestMetricsHandlerExposition(t *testing.T) {
	src, d := fixture()
	r, err := New(Config{NodeName: "n1", Source: src, Detailer: d})
	if err != nil {
		t.Fatal(err)
	}
	h := &MetricsHandler{Reporter: r, Eviction: fakeEviction{}}
	// Before the first report the families are declared, empty.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if err := promtext.Check(rec.Body.Bytes()); err != nil {
		t.Errorf("empty /metrics fails the check: %v", err)
	}
	if err := r.ReportOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		"# TYPE container_cpu_usage_seconds_total counter\n",
		`container_cpu_usage_seconds_total{namespace="default",pod="web",container="a"} 7e-09`,
		`container_memory_working_set_bytes{namespace="default",pod="web",container="a"} 60`,
		`container_memory_rss{namespace="default",pod="web",container="a"} 50`,
		`pod_network_receive_bytes_total{namespace="default",pod="web"} 10`,
		`pod_network_transmit_bytes_total{namespace="default",pod="web"} 20`,
		`pod_cpu_usage_seconds_total{namespace="a",pod="z"} 2`,
		"node_cpu_usage_seconds_total 5\n",
		"node_memory_working_set_bytes 2.68435456e+08\n",
		`skiff_agent_evictions_total{eviction_signal="memory.available"} 2`,
		`skiff_agent_node_pressure{condition="MemoryPressure"} 1`,
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if err := promtext.Check(rec.Body.Bytes()); err != nil {
		t.Errorf("/metrics fails the check: %v", err)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/metrics", bytes.NewReader(nil)))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics = %d; want 405", rec.Code)
	}
}
