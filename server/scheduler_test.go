package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// TestServerSchedulesPods: the server runs the scheduler; a pod created
// through the API is bound to the one ready node that fits, gets the
// Scheduled event, and a pod too big for it gets the Kubernetes-style
// reason; /metrics shows the attempts.
func TestServerSchedulesPods(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	now := h.clk.Now().UTC().Format(time.RFC3339)
	h.mustDo("POST", "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`, 201)
	h.mustDo("PUT", "/api/v1/nodes/edge-1/status", admin, fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"},`+
		`"status":{"capacity":{"cpu":"2","memory":"1Gi","pods":"10"},"allocatable":{"cpu":"2","memory":"1Gi","pods":"10"},`+
		`"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":%q}]}}`, now), 200)
	pod := func(name, mem string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","image":"busybox",` +
			`"resources":{"requests":{"memory":"` + mem + `"}}}]}}`
	}
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, pod("small", "100Mi"), 201)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, pod("huge", "4Gi"), 201)

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	getPod := func(name string) api.Pod {
		var p api.Pod
		json.Unmarshal(h.mustDo("GET", "/api/v1/namespaces/default/pods/"+name, admin, "", 200), &p)
		return p
	}
	waitFor("small to be bound", func() bool { return getPod("small").Spec.NodeName == "edge-1" })
	waitFor("huge to be marked unschedulable", func() bool {
		for _, c := range getPod("huge").Status.Conditions {
			if c.Type == "PodScheduled" && c.Status == "False" {
				return strings.Contains(c.Message, "0/1 nodes are available: 1 Insufficient memory")
			}
		}
		return false
	})
	waitFor("events", func() bool {
		b := string(h.mustDo("GET", "/api/v1/namespaces/default/events", admin, "", 200))
		return strings.Contains(b, `"Scheduled"`) && strings.Contains(b, "Successfully assigned default/small to edge-1") &&
			strings.Contains(b, `"FailedScheduling"`)
	})
	m := string(h.mustDo("GET", "/metrics", admin, "", 200))
	for _, want := range []string{`skiff_scheduler_attempts_total{result="scheduled"} 1`, `skiff_scheduler_e2e_scheduling_duration_seconds_count 1`, `skiff_scheduler_effects_dropped_total 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
