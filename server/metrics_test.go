package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/internal/promtext"
)

func TestMetricsCountRequestsAndNeedAdmin(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	h.mustDo("GET", "/api/v1/namespaces/default/pods", admin, "", 200)
	h.mustDo("GET", "/api/v1/namespaces/default/pods/nope", admin, "", 404)
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", admin, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, 201)

	if code, _ := h.do("GET", "/metrics", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d; want 401", code)
	}
	_, cred := h.join(h.joinToken(), "n1", "")
	if code, _ := h.do("GET", "/metrics", cred, ""); code != http.StatusForbidden {
		t.Fatalf("/metrics with a node credential: %d; want 403", code)
	}
	body := string(h.mustDo("GET", "/metrics", admin, "", 200))
	for _, want := range []string{
		`skiff_http_requests_total{resource="pods",verb="list",code="200"} 1`,
		`skiff_http_requests_total{resource="pods",verb="get",code="404"} 1`,
		`skiff_http_requests_total{resource="configmaps",verb="create",code="201"} 1`,
		`skiff_http_request_duration_seconds_count{resource="pods",verb="list"} 1`,
		"skiff_store_writes_total ",
		"skiff_store_watchers ",
		"skiff_store_hot_reads_total ",
		"skiff_store_cold_reads_total ",
		"skiff_http_watch_streams 0",
		"process_resident_memory_bytes ",
		"go_goroutines ",
		`skiff_http_request_duration_seconds_bucket{resource="pods",verb="list",le="+Inf"} 1`,
		"# TYPE skiff_http_request_duration_seconds histogram\n",
		"# TYPE skiff_build_info gauge\nskiff_build_info{version=",
		`skiff_workqueue_depth{name="deployment"} `,
		`skiff_workqueue_queue_duration_seconds_bucket{name="deployment",le="0.001"} `,
		`skiff_workqueue_work_duration_seconds_count{name="endpoints"} `,
		`skiff_scheduler_e2e_scheduling_duration_seconds_bucket{le="+Inf"} `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "vmrange") {
		t.Error("/metrics has vmrange buckets, which histogram_quantile cannot read")
	}
	// The parser check: every family has HELP and TYPE, every histogram
	// le buckets, +Inf, _sum and _count.
	if err := promtext.Check([]byte(body)); err != nil {
		t.Errorf("/metrics fails the exposition check: %v", err)
	}
}

func TestRequestLabels(t *testing.T) {
	cases := []struct{ method, url, resource, verb string }{
		{"GET", "/api/v1/pods", "pods", "list"},
		{"GET", "/api/v1/pods?watch=true", "pods", "watch"},
		{"GET", "/api/v1/watch/namespaces/default/pods", "pods", "watch"},
		{"GET", "/api/v1/namespaces/default/pods/web", "pods", "get"},
		{"GET", "/api/v1/namespaces/default/pods/web/log", "pods/log", "get"},
		{"PUT", "/api/v1/nodes/n1/status", "nodes/status", "update"},
		{"PATCH", "/apis/apps/v1/namespaces/x/deployments/d", "deployments", "patch"},
		{"DELETE", "/api/v1/namespaces/x", "namespaces", "delete"},
		{"POST", "/api/v1/join", "join", "create"},
		{"GET", "/healthz", "healthz", "get"},
		{"GET", "/api/v1/widgets/" + strings.Repeat("x", 50), "other", "get"},
		{"GET", "/favicon.ico", "other", "get"},
		{"GET", "/api", "discovery", "get"},
		{"GET", "/apis", "discovery", "get"},
		{"GET", "/api/v1", "discovery", "get"},
		{"GET", "/apis/apps/v1", "discovery", "get"},
		{"GET", "/apis/apps", "discovery", "get"},
		{"GET", "/openapi/v3/api/v1", "openapi", "get"},
		{"GET", "/apis/apps/v1/deployments", "deployments", "list"},
		{"POST", "/api/v1/skiff/nodes/n1/stats", "usagereports", "create"},
		{"GET", "/apis/metrics.k8s.io/v1beta1/nodes", "metrics.k8s.io", "get"},
		{"GET", "/api/v1/skiff/watches?watch=/api/v1/pods", "watches", "watch"},
		{"POST", "/api/v1/skiff/watches", "other", "create"},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.url, nil)
		if res, verb := requestLabels(r); res != c.resource || verb != c.verb {
			t.Errorf("%s %s: labels %s %s; want %s %s", c.method, c.url, res, verb, c.resource, c.verb)
		}
	}
}
