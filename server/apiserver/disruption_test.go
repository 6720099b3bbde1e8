package apiserver

import (
	"strings"
	"testing"
)

// TestEvictionHonoursDisruptionBudget: with minAvailable 2 of 3 ready
// pods one eviction goes through and the next is refused with 429 (what
// kubectl drain retries); an unready pod may go while the budget holds;
// two budgets over one pod are refused.
func TestEvictionHonoursDisruptionBudget(t *testing.T) {
	h := newHarness(t)
	const pods = "/api/v1/namespaces/default/pods"
	ready := func(name string, isReady bool) {
		t.Helper()
		body := strings.Replace(podJSON, `"name":"web"`, `"name":"`+name+`"`, 1)
		body = strings.Replace(body, `"spec":{`, `"spec":{"nodeName":"n1",`, 1)
		if code, b := h.do("POST", pods, "application/json", body); code != 201 {
			t.Fatalf("create %s = %d %s", name, code, b)
		}
		status := "True"
		if !isReady {
			status = "False"
		}
		if code, b := h.do("PATCH", pods+"/"+name+"/status", "application/merge-patch+json",
			`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"`+status+`"}]}}`); code != 200 {
			t.Fatalf("status of %s = %d %s", name, code, b)
		}
	}
	evict := func(name string) (int, string) {
		code, b := h.do("POST", pods+"/"+name+"/eviction", "application/json",
			`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"`+name+`","namespace":"default"}}`)
		return code, string(b)
	}
	for _, n := range []string{"a", "b", "c"} {
		ready(n, true)
	}
	if code, b := h.do("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", "application/json",
		`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"web"},"spec":{"minAvailable":2,"selector":{"matchLabels":{"app":"web"}}}}`); code != 201 {
		t.Fatalf("create pdb = %d %s", code, b)
	}
	if code, b := evict("a"); code != 201 {
		t.Fatalf("first eviction = %d %s; want 201", code, b)
	}
	code, b := evict("b")
	if code != 429 || !strings.Contains(b, "Cannot evict pod as it would violate the pod's disruption budget.") || !strings.Contains(b, "DisruptionBudget") {
		t.Fatalf("second eviction = %d %s; want 429 naming the budget", code, b)
	}
	if code, _ := h.do("GET", pods+"/b", "", ""); code != 200 {
		t.Fatalf("pod b after a refused eviction: GET = %d", code)
	}
	// An unready pod: with 2 healthy the budget is met, so it may go.
	ready("d", false)
	if code, b := evict("d"); code != 201 {
		t.Errorf("eviction of an unready pod with the budget met = %d %s; want 201", code, b)
	}
	if code, b := h.do("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", "application/json",
		`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"other"},"spec":{"maxUnavailable":"50%","selector":{"matchLabels":{"app":"web"}}}}`); code != 201 {
		t.Fatalf("create second pdb = %d %s", code, b)
	}
	if code, b := evict("c"); code != 500 || !strings.Contains(b, "more than one PodDisruptionBudget") {
		t.Errorf("eviction under two budgets = %d %s; want 500", code, b)
	}
	if code, b := h.do("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets", "application/json",
		`{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"bad"},"spec":{"minAvailable":1,"maxUnavailable":1}}`); code != 422 {
		t.Errorf("pdb with both minAvailable and maxUnavailable = %d %s; want 422", code, b)
	}
}
