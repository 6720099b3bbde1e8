package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// openStream opens the assignment stream of node with its credential:
// a watch on the pods bound to it.
func openStream(t *testing.T, h *harness, node, cred string) (*bufio.Reader, func()) {
	t.Helper()
	req, _ := http.NewRequest("GET", h.info.URL+"/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3D"+node, nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("assignment stream of %s: %d", node, resp.StatusCode)
	}
	return bufio.NewReader(resp.Body), func() { resp.Body.Close() }
}

func nextEvent(t *testing.T, br *bufio.Reader) (string, api.Pod) {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		if strings.TrimSpace(line) == "" {
			continue // keep-alive
		}
		var ev struct {
			Type   string  `json:"type"`
			Object api.Pod `json:"object"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		return ev.Type, ev.Object
	}
}

// TestAssignmentStreamPushesBindings: an agent's one long-lived stream
// (opened by the agent, so it works behind NAT) carries exactly the pods
// bound to its node — a binding made after the stream opened arrives as
// ADDED, a pod bound elsewhere never arrives, and a deletion arrives — and
// another node's credential cannot open it.
func TestAssignmentStreamPushesBindings(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, credA := h.join(h.joinToken(), "node-a", "")
	_, credB := h.join(h.joinToken(), "node-b", "")

	stream, closeStream := openStream(t, h, "node-a", credA)
	defer closeStream()
	pod := func(name, node string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"nodeName":"` + node +
			`","containers":[{"name":"c","image":"busybox"}]}}`
	}
	pods := "/api/v1/namespaces/default/pods"
	h.mustDo("POST", pods, admin, pod("elsewhere", "node-b"), 201)
	h.mustDo("POST", pods, admin, pod("unbound", ""), 201)
	h.mustDo("POST", pods, admin, pod("direct", "node-a"), 201)
	if typ, p := nextEvent(t, stream); typ != "ADDED" || p.Name != "direct" {
		t.Fatalf("first event %s %s; want ADDED direct", typ, p.Name)
	}
	// Binding an existing pod (as the scheduler does) is pushed as ADDED.
	h.mustDo("PATCH", pods+"/unbound", admin, `{"spec":{"nodeName":"node-a"}}`, 200)
	if typ, p := nextEvent(t, stream); typ != "ADDED" || p.Name != "unbound" || p.Spec.NodeName != "node-a" {
		t.Fatalf("binding event %s %s on %q; want ADDED unbound on node-a", typ, p.Name, p.Spec.NodeName)
	}
	h.mustDo("DELETE", pods+"/direct?gracePeriodSeconds=0", admin, "", 200)
	if typ, p := nextEvent(t, stream); typ != "DELETED" || p.Name != "direct" {
		t.Fatalf("deletion event %s %s; want DELETED direct", typ, p.Name)
	}

	// node-b may not open node-a's stream, nor an unfiltered one.
	for _, q := range []string{"?watch=true&fieldSelector=spec.nodeName%3Dnode-a", "?watch=true"} {
		req, _ := http.NewRequest("GET", h.info.URL+"/api/v1/pods"+q, nil)
		req.Header.Set("Authorization", "Bearer "+credB)
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("node-b watching %s: %d; want 403", q, resp.StatusCode)
		}
	}
}
