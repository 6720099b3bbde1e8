package apiserver

import (
	"strings"
	"testing"
)

// TestDryRunWritesNothing sends every write with dryRun=All and checks the
// answer is what the real write would answer while the store (its
// revision) does not move.
func TestDryRunWritesNothing(t *testing.T) {
	h := newHarness(t)
	const pods = "/api/v1/namespaces/default/pods"
	rev := h.store.Revision()
	code, b := h.do("POST", pods+"?dryRun=All", "application/json", podJSON)
	if code != 201 || !strings.Contains(string(b), `"uid"`) || strings.Contains(string(b), `"resourceVersion"`) {
		t.Errorf("POST ?dryRun=All = %d %s; want 201 with a uid and no resourceVersion", code, b)
	}
	if code, _ := h.do("GET", pods+"/web", "", ""); code != 404 {
		t.Errorf("after a dry-run create GET = %d; want 404", code)
	}
	if code, b := h.do("POST", pods+"?dryRun=All", "application/json", strings.Replace(podJSON, `"busybox"`, `""`, 1)); code != 422 {
		t.Errorf("invalid dry-run create = %d %s; want 422", code, b)
	}
	if code, _ := h.do("POST", pods+"?dryRun=Some", "application/json", podJSON); code != 400 {
		t.Errorf("dryRun=Some = %d; want 400", code)
	}
	if h.store.Revision() != rev {
		t.Fatalf("store revision moved from %d to %d on dry runs", rev, h.store.Revision())
	}

	h.do("POST", pods, "application/json", podJSON)
	rev = h.store.Revision()
	if code, b := h.do("POST", pods+"?dryRun=All", "application/json", podJSON); code != 409 {
		t.Errorf("dry-run create of an existing name = %d %s; want 409", code, b)
	}
	code, b = h.do("PATCH", pods+"/web?dryRun=All", "application/merge-patch+json", `{"metadata":{"labels":{"x":"y"}}}`)
	if code != 200 || !strings.Contains(string(b), `"x":"y"`) {
		t.Errorf("dry-run patch = %d %s; want 200 with the new label", code, b)
	}
	code, b = h.do("PUT", pods+"/web?dryRun=All", "application/json", strings.Replace(podJSON, `"app":"web"`, `"app":"new"`, 1))
	if code != 200 || !strings.Contains(string(b), `"app":"new"`) {
		t.Errorf("dry-run update = %d %s; want 200 with the new label", code, b)
	}
	if code, b := h.do("PATCH", pods+"/web?dryRun=All", "application/merge-patch+json", `{"spec":{"containers":[{"name":"c","image":""}]}}`); code != 422 {
		t.Errorf("invalid dry-run patch = %d %s; want 422", code, b)
	}
	if code, _ := h.do("DELETE", pods+"/web?dryRun=All", "", ""); code != 200 {
		t.Errorf("dry-run delete = %d; want 200", code)
	}
	if code, _ := h.do("DELETE", pods+"/web", "application/json", `{"dryRun":["All"]}`); code != 200 {
		t.Errorf("dry-run delete (body) = %d; want 200", code)
	}
	if code, _ := h.do("DELETE", pods+"/nope?dryRun=All", "", ""); code != 404 {
		t.Errorf("dry-run delete of a missing pod = %d; want 404", code)
	}
	if code, _ := h.do("DELETE", "/api/v1/namespaces/default?dryRun=All", "", ""); code != 403 {
		t.Errorf("dry-run delete of namespace default = %d; want 403", code)
	}
	if code, b := h.do("POST", pods+"/web/eviction", "application/json", `{"metadata":{"name":"web"},"deleteOptions":{"dryRun":["All"]}}`); code != 201 {
		t.Errorf("eviction with dryRun = %d %s; want 201", code, b)
	}
	if code, _ := h.do("POST", pods+"/web/eviction?dryRun=All", "application/json", `{"metadata":{"name":"web"}}`); code != 201 {
		t.Errorf("eviction with ?dryRun=All = %d; want 201", code)
	}
	if h.store.Revision() != rev {
		t.Errorf("store revision moved from %d to %d on pod dry runs", rev, h.store.Revision())
	}
	const rs = "/apis/apps/v1/namespaces/default/replicasets"
	if code, b := h.do("POST", rs, "application/json", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"front"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"f"}},"template":{"metadata":{"labels":{"app":"f"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`); code != 201 {
		t.Fatalf("create replica set = %d %s", code, b)
	}
	rev = h.store.Revision()
	if code, b := h.do("PATCH", rs+"/front/scale?dryRun=All", "application/merge-patch+json", `{"spec":{"replicas":4}}`); code != 200 || !strings.Contains(string(b), `"replicas":4`) {
		t.Errorf("dry-run scale of a replica set = %d %s; want 200 with 4 replicas", code, b)
	}
	if h.store.Revision() != rev {
		t.Errorf("store revision moved from %d to %d on dry runs", rev, h.store.Revision())
	}
	if code, b := h.do("PATCH", rs+"/front/scale", "application/merge-patch+json", `{"spec":{"replicas":3}}`); code != 200 || !strings.Contains(string(b), `"replicas":3`) {
		t.Errorf("scale of a replica set = %d %s; want 200 with 3 replicas", code, b)
	}
	code, b = h.do("GET", pods+"/web", "", "")
	if code != 200 || strings.Contains(string(b), `"x":"y"`) || strings.Contains(string(b), `"new"`) {
		t.Errorf("after dry runs GET = %d %s; want the pod unchanged", code, b)
	}
}
