package apiserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

const scaleDeploymentJSON = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`

func TestScaleSubresource(t *testing.T) {
	h := newHarness(t)
	const deps = "/apis/apps/v1/namespaces/default/deployments"
	if code, b := h.do("POST", deps, "application/json", scaleDeploymentJSON); code != 201 {
		t.Fatalf("create deployment = %d %s", code, b)
	}
	scalePath := deps + "/web/scale"
	var sc scale
	code, b := h.do("GET", scalePath, "", "")
	if err := json.Unmarshal(b, &sc); code != 200 || err != nil {
		t.Fatalf("GET scale = %d %s", code, b)
	}
	if sc.Kind != "Scale" || sc.APIVersion != "autoscaling/v1" || sc.Spec.Replicas != 2 || sc.Status.Selector != "app=web" || sc.Metadata.Name != "web" || sc.Metadata.ResourceVersion == "" {
		t.Errorf("GET scale = %s", b)
	}
	for _, tc := range []struct {
		name, method, ctype, body string
		code                      int
		want                      string
	}{
		{"merge patch", "PATCH", "application/merge-patch+json", `{"spec":{"replicas":4}}`, 200, `"spec":{"replicas":4}`},
		{"strategic patch", "PATCH", "application/strategic-merge-patch+json", `{"spec":{"replicas":5}}`, 200, `"spec":{"replicas":5}`},
		{"json patch", "PATCH", "application/json-patch+json", `[]`, 415, "not supported on scale"},
		{"put", "PUT", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":1}}`, 200, `"spec":{"replicas":1}`},
		{"put stale", "PUT", "application/json", `{"metadata":{"name":"web","resourceVersion":"1"},"spec":{"replicas":3}}`, 409, "Conflict"},
		{"put wrong name", "PUT", "application/json", `{"metadata":{"name":"db"},"spec":{"replicas":3}}`, 400, "does not match"},
		{"put wrong kind", "PUT", "application/json", `{"kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":3}}`, 400, "autoscaling/v1 Scale"},
		{"negative", "PATCH", "application/merge-patch+json", `{"spec":{"replicas":-1}}`, 422, `"field":"spec.replicas"`},
		{"unknown field", "PUT", "application/json", `{"metadata":{"name":"web"},"spec":{"replicas":3,"x":1}}`, 400, "unknown field"},
		{"malformed", "PATCH", "application/merge-patch+json", `{`, 400, "BadRequest"},
		{"delete", "DELETE", "", "", 405, "MethodNotAllowed"},
		{"missing", "GET", "", "", 404, `deployments.apps \"nope\" not found`},
	} {
		path := scalePath
		if tc.name == "missing" {
			path = deps + "/nope/scale"
		}
		code, b := h.do(tc.method, path, tc.ctype, tc.body)
		if code != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %s scale = %d %s; want %d containing %s", tc.name, tc.method, code, b, tc.code, tc.want)
		}
	}
	code, b = h.do("GET", deps+"/web", "", "")
	if code != 200 || !strings.Contains(string(b), `"replicas":1`) || !strings.Contains(string(b), `"image":"nginx"`) {
		t.Errorf("deployment after scaling = %d %s; want replicas 1 and the rest kept", code, b)
	}
	if code, _ := h.do("GET", "/api/v1/namespaces/default/pods/x/scale", "", ""); code != 404 {
		t.Errorf("GET pods/x/scale = %d; want 404 (pods have no scale)", code)
	}
}

func TestEvictionSubresource(t *testing.T) {
	h := newHarness(t)
	const pods = "/api/v1/namespaces/default/pods"
	create := func(name, node string) {
		t.Helper()
		body := strings.Replace(podJSON, `"name":"web"`, `"name":"`+name+`"`, 1)
		if node != "" {
			body = strings.Replace(body, `"spec":{`, `"spec":{"nodeName":"`+node+`",`, 1)
		}
		if code, b := h.do("POST", pods, "application/json", body); code != 201 {
			t.Fatalf("create pod %s = %d %s", name, code, b)
		}
	}
	eviction := func(name string) string {
		return `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `","namespace":"default"}}`
	}
	create("loose", "")
	code, b := h.do("POST", pods+"/loose/eviction", "application/json", eviction("loose"))
	if code != 201 || !strings.Contains(string(b), `"status":"Success"`) {
		t.Errorf("evict an unbound pod = %d %s; want 201 Success", code, b)
	}
	if code, _ := h.do("GET", pods+"/loose", "", ""); code != 404 {
		t.Errorf("unbound pod after eviction: GET = %d; want 404", code)
	}

	create("bound", "node-1")
	if code, b := h.do("POST", pods+"/bound/eviction", "application/json", eviction("bound")); code != 201 {
		t.Fatalf("evict a bound pod = %d %s", code, b)
	}
	code, b = h.do("GET", pods+"/bound", "", "")
	if code != 200 || !strings.Contains(string(b), `"deletionTimestamp"`) || !strings.Contains(string(b), `"deletionGracePeriodSeconds":30`) {
		t.Errorf("bound pod after eviction = %d %s; want it terminating with a 30s grace period", code, b)
	}
	h.clock.Advance(time.Second)

	create("fast", "node-1")
	withGrace := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"fast"},"deleteOptions":{"gracePeriodSeconds":0}}`
	if code, b := h.do("POST", pods+"/fast/eviction", "application/json", withGrace); code != 201 {
		t.Errorf("evict with grace 0 = %d %s", code, b)
	}
	if code, _ := h.do("GET", pods+"/fast", "", ""); code != 404 {
		t.Errorf("pod evicted with grace 0: GET = %d; want 404", code)
	}

	create("guarded", "")
	for _, tc := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"missing pod", eviction("nope"), 404, `pods \"nope\" not found`},
		{"name mismatch", eviction("other"), 400, "does not match"},
		{"wrong kind", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"guarded"}}`, 400, "policy/v1 Eviction"},
		{"uid precondition", `{"metadata":{"name":"guarded"},"deleteOptions":{"preconditions":{"uid":"not-it"}}}`, 409, "Precondition failed"},
		{"rv precondition", `{"metadata":{"name":"guarded"},"deleteOptions":{"preconditions":{"resourceVersion":"1"}}}`, 409, "Conflict"},
		{"unknown field", `{"metadata":{"name":"guarded"},"deleteOption":{}}`, 400, "unknown field"},
		{"not json", `{`, 400, "BadRequest"},
	} {
		path := pods + "/guarded/eviction"
		if tc.name == "missing pod" {
			path = pods + "/nope/eviction"
		}
		code, b := h.do("POST", path, "application/json", tc.body)
		if code != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: POST eviction = %d %s; want %d containing %s", tc.name, code, b, tc.code, tc.want)
		}
	}
	if code, _ := h.do("GET", pods+"/guarded/eviction", "", ""); code != 405 {
		t.Errorf("GET eviction = %d; want 405", code)
	}
	if code, _ := h.do("GET", pods+"/guarded", "", ""); code != 200 {
		t.Errorf("guarded pod after refused evictions: GET = %d; want 200", code)
	}
}
