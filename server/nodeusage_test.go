package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDashboardIsServedWithoutAToken(t *testing.T) {
	h := startHarness(t, "", nil)
	code, b := h.do("GET", "/", "", "")
	if code != http.StatusOK || !strings.Contains(string(b), "<title>skiff</title>") {
		t.Fatalf("GET / = %d %.80q; want 200 with the dashboard", code, b)
	}
	// Everything else that is not an endpoint is still a 404 Status, and
	// the API still wants a token.
	code, b = h.do("GET", "/nope", "", "")
	if st := statusOf(t, b); code != http.StatusNotFound || st.Reason != "NotFound" {
		t.Errorf("GET /nope = %d %s; want a 404 NotFound Status", code, b)
	}
	if code, _ := h.do("GET", "/api/v1/pods", "", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/pods without a token = %d; want 401", code)
	}
}

func TestNodeUsageNeedsAdminAndRecordsSamples(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	const path = "/api/v1/skiff/nodes/edge-1/usage"
	if code, _ := h.do("GET", path, "", ""); code != http.StatusUnauthorized {
		t.Errorf("usage without a token = %d; want 401", code)
	}
	_, cred := h.join(h.joinToken(), "edge-2", "")
	if code, _ := h.do("GET", path, cred, ""); code != http.StatusForbidden {
		t.Errorf("usage with a node credential = %d; want 403", code)
	}
	code, b := h.do("GET", path, admin, "")
	if st := statusOf(t, b); code != http.StatusNotFound || !strings.Contains(st.Message, "edge-1") {
		t.Errorf("usage of a missing node = %d %s; want a 404 Status naming it", code, b)
	}

	h.mustDo("POST", "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`, 201)
	now := h.clk.Now().UTC().Format(time.RFC3339)
	h.mustDo("PATCH", "/api/v1/nodes/edge-1/status", admin, `{"status":{"allocatable":{"cpu":"2","memory":"1Gi","pods":"110"},
		"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"`+now+`"}]}}`, 200)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
		"spec":{"nodeName":"edge-1","containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"500m","memory":"128Mi"}}}]}}`, 201)

	// A node created since the last sample has none yet.
	var u NodeUsage
	if err := json.Unmarshal(h.mustDo("GET", path, admin, "", 200), &u); err != nil {
		t.Fatal(err)
	}
	if u.Node != "edge-1" || u.IntervalSeconds != 60 || u.LastHeartbeat == nil {
		t.Errorf("usage = %+v; want node edge-1, interval 60 and the heartbeat", u)
	}
	// Step the server's clock a minute at a time until the sampler has
	// run (it runs on its own goroutine).
	deadline := time.Now().Add(20 * time.Second)
	for len(u.Samples) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no usage sample within 20s of stepping the clock")
		}
		h.clk.Advance(time.Minute)
		if err := json.Unmarshal(h.mustDo("GET", path, admin, "", 200), &u); err != nil {
			t.Fatal(err)
		}
	}
	s := u.Samples[len(u.Samples)-1]
	if s.CPUAllocatableMilli != 2000 || s.CPURequestedMilli != 500 || s.MemoryAllocatableBytes != 1<<30 || s.MemoryRequestedBytes != 128<<20 || s.Pods != 1 {
		t.Errorf("sample = %+v; want 500m of 2 CPUs, 128Mi of 1Gi, 1 pod", s)
	}
}
