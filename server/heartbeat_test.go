package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// TestLightweightHeartbeat: the heartbeat call records liveness without
// touching the store, only for the caller's own node.
func TestLightweightHeartbeat(t *testing.T) {
	clk := clock.NewFake(time.Now())
	h := startHarness(t, "", clk)
	code, cred := h.join(h.joinToken(), "edge-1", "")
	if code != http.StatusOK {
		t.Fatalf("join = %d", code)
	}
	admin := h.adminToken()
	h.mustDo(http.MethodPost, "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"edge-1"}}`, http.StatusCreated)
	revision := func() string {
		var l struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		json.Unmarshal(h.mustDo(http.MethodGet, "/api/v1/nodes", admin, "", http.StatusOK), &l)
		return l.Metadata.ResourceVersion
	}
	// The node IPAM writes the new Node's podCIDR; wait for that write.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(h.mustDo(http.MethodGet, "/api/v1/nodes/edge-1", admin, "", http.StatusOK)), "podCIDR") {
		if time.Now().After(deadline) {
			t.Fatal("edge-1 got no podCIDR")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rvBefore := revision()
	clk.Advance(7 * time.Second)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusNoContent)
	var u NodeUsage
	if err := json.Unmarshal(h.mustDo(http.MethodGet, "/api/v1/skiff/nodes/edge-1/usage", admin, "", http.StatusOK), &u); err != nil {
		t.Fatal(err)
	}
	if u.LastHeartbeat == nil || !u.LastHeartbeat.Equal(clk.Now()) {
		t.Fatalf("last heartbeat of edge-1 = %v; want %v", u.LastHeartbeat, clk.Now())
	}
	if rv := revision(); rv != rvBefore {
		t.Fatalf("the heartbeat wrote to the store: revision %s → %s", rvBefore, rv)
	}
	// Marked unreachable by the controller while silent: the beat asks
	// for the conditions (205) until the agent writes its own.
	unknown := `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}]}}`
	h.mustDoType(http.MethodPatch, "/api/v1/nodes/edge-1/status", admin, "application/strategic-merge-patch+json", unknown, http.StatusOK)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusResetContent)
	ready := `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}`
	h.mustDoType(http.MethodPatch, "/api/v1/nodes/edge-1/status", cred, "application/strategic-merge-patch+json", ready, http.StatusOK)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusNoContent)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat", cred, "", http.StatusForbidden)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", "", "", http.StatusUnauthorized)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/Bad_Name/heartbeat", admin, "", http.StatusBadRequest)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-9/heartbeat", admin, "", http.StatusNotFound)
	// Served without the router (nodeReports), yet answered as before:
	// another method or a longer path is no heartbeat.
	h.mustDo(http.MethodGet, "/api/v1/skiff/nodes/edge-1/heartbeat", cred, "", http.StatusNotFound)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat/x", cred, "", http.StatusNotFound)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes//heartbeat", admin, "", http.StatusNotFound)
}

// TestUsageReportCountsAsHeartbeat: an agent's usage report keeps its node
// alive like a heartbeat, asks for the conditions (205) while the Node is
// marked unreachable, and a node cannot keep another node alive with one.
func TestUsageReportCountsAsHeartbeat(t *testing.T) {
	clk := clock.NewFake(time.Now())
	h := startHarness(t, "", clk)
	admin := h.adminToken()
	creds := h.joinNodes("edge-1", "edge-2")
	lastHeartbeat := func(node string) *time.Time {
		t.Helper()
		var u NodeUsage
		if err := json.Unmarshal(h.mustDo(http.MethodGet, "/api/v1/skiff/nodes/"+node+"/usage", admin, "", http.StatusOK), &u); err != nil {
			t.Fatal(err)
		}
		return u.LastHeartbeat
	}
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/heartbeat", creds["edge-2"], "", http.StatusNoContent)
	edge2 := clk.Now()
	clk.Advance(12 * time.Second)
	e1 := creds["edge-1"]
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", e1, report(clk.Now().UTC(), 1), http.StatusNoContent)
	if at := lastHeartbeat("edge-1"); at == nil || !at.Equal(clk.Now()) {
		t.Fatalf("edge-1's last heartbeat after its usage report = %v; want %v", at, clk.Now())
	}
	// A hostile node's report for another node is refused and keeps
	// nothing alive.
	clk.Advance(time.Second)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/stats", e1, report(clk.Now().UTC(), 1), http.StatusForbidden)
	if at := lastHeartbeat("edge-2"); at == nil || !at.Equal(edge2) {
		t.Fatalf("edge-2's last heartbeat after edge-1 reported for it = %v; want %v", at, edge2)
	}
	// Junk keeps nothing alive either.
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-2/stats", creds["edge-2"], `{"node":{}}`, http.StatusBadRequest)
	if at := lastHeartbeat("edge-2"); at == nil || !at.Equal(edge2) {
		t.Fatalf("edge-2's last heartbeat after a bad report = %v; want %v", at, edge2)
	}
	unknown := `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown"}]}}`
	h.mustDoType(http.MethodPatch, "/api/v1/nodes/edge-1/status", admin, "application/strategic-merge-patch+json", unknown, http.StatusOK)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", e1, report(clk.Now().UTC(), 2), http.StatusResetContent)
	ready := `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}`
	h.mustDoType(http.MethodPatch, "/api/v1/nodes/edge-1/status", e1, "application/strategic-merge-patch+json", ready, http.StatusOK)
	h.mustDo(http.MethodPost, "/api/v1/skiff/nodes/edge-1/stats", e1, report(clk.Now().UTC(), 3), http.StatusNoContent)
}
