package apiserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

const deploymentJSON = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx","env":[{"name":"A","value":"1"}]}],"tolerations":[{"key":"a","operator":"Exists"}]}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}}}`

// TestAPIPatchTypes sends each patch type Kubernetes clients use against a
// real server and checks the stored result or the error.
func TestAPIPatchTypes(t *testing.T) {
	h := newHarness(t)
	deps := "/apis/apps/v1/namespaces/default/deployments"
	if code, b := h.do("POST", deps, "application/json", deploymentJSON); code != 201 {
		t.Fatalf("create deployment = %d %s", code, b)
	}
	if code, b := h.do("POST", "/api/v1/nodes", "application/json", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"zone":"a"}},"spec":{"podCIDR":"10.42.0.0/24"}}`); code != 201 {
		t.Fatalf("create node = %d %s", code, b)
	}
	const (
		smp   = "application/strategic-merge-patch+json"
		jp    = "application/json-patch+json"
		merge = "application/merge-patch+json"
	)
	tests := []struct {
		name, path, ctype, body string
		wantCode                int
		check                   func(t *testing.T, body []byte) // on success
		wantInBody              string                          // on failure
	}{
		{"strategic: add a container and an env var (merged by name)", deps + "/web", smp,
			`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"},{"name":"web","env":[{"name":"B","value":"2"}]}]}}}}`, 200,
			func(t *testing.T, b []byte) {
				d := decodeDeployment(t, b)
				cs := d.Spec.Template.Spec.Containers
				if len(cs) != 2 || cs[0].Name != "sidecar" || cs[1].Name != "web" || cs[1].Image != "nginx" || len(cs[1].Env) != 2 || cs[1].Env[0].Name != "B" {
					t.Errorf("containers = %+v; want sidecar, then web (nginx) with env [B A]", cs)
				}
			}, ""},
		{"strategic: tolerations are replaced whole", deps + "/web", smp,
			`{"spec":{"template":{"spec":{"tolerations":[{"key":"b","operator":"Exists"}]}}}}`, 200,
			func(t *testing.T, b []byte) {
				if tol := decodeDeployment(t, b).Spec.Template.Spec.Tolerations; len(tol) != 1 || tol[0].Key != "b" {
					t.Errorf("tolerations = %+v; want only b", tol)
				}
			}, ""},
		{"strategic: $patch delete of a container", deps + "/web", smp,
			`{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"web"}],"containers":[{"name":"sidecar","$patch":"delete"}]}}}}`, 200,
			func(t *testing.T, b []byte) {
				if cs := decodeDeployment(t, b).Spec.Template.Spec.Containers; len(cs) != 1 || cs[0].Name != "web" {
					t.Errorf("containers = %+v; want only web", cs)
				}
			}, ""},
		{"strategic: $retainKeys switches the strategy", deps + "/web", smp,
			`{"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}}`, 200,
			func(t *testing.T, b []byte) {
				if s := decodeDeployment(t, b).Spec.Strategy; s.Type != "Recreate" || s.RollingUpdate != nil {
					t.Errorf("strategy = %+v; want Recreate without rollingUpdate", s)
				}
			}, ""},
		{"strategic: kubectl cordon", "/api/v1/nodes/n1", smp, `{"spec":{"unschedulable":true}}`, 200,
			func(t *testing.T, b []byte) {
				var n api.Node
				if err := json.Unmarshal(b, &n); err != nil || !n.Spec.Unschedulable || n.Spec.PodCIDR != "10.42.0.0/24" || n.Labels["zone"] != "a" {
					t.Errorf("node = %s; want unschedulable with podCIDR and labels kept", trim(b))
				}
			}, ""},
		{"strategic: unknown directive", deps + "/web", smp, `{"spec":{"$frob":1}}`, 400, nil, `unknown directive \"$frob\"`},
		{"strategic: not an object", deps + "/web", smp, `[]`, 400, nil, "must be a JSON object"},
		{"strategic: result is invalid", deps + "/web", smp, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":null}]}}}}`, 422, nil, "spec.template.spec.containers[0].image"},
		{"strategic: unknown field", deps + "/web", smp, `{"spec":{"replics":3}}`, 400, nil, `unknown field \"spec.replics\"`},
		{"json patch: replace replicas and add a label", deps + "/web", jp,
			`[{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/spec/replicas","value":5},{"op":"add","path":"/metadata/labels","value":{"a/b":"c"}}]`, 200,
			func(t *testing.T, b []byte) {
				d := decodeDeployment(t, b)
				if d.Spec.Replicas == nil || *d.Spec.Replicas != 5 || d.Labels["a/b"] != "c" {
					t.Errorf("deployment = %s; want replicas 5 and label a/b=c", trim(b))
				}
			}, ""},
		{"json patch: escaped pointer", deps + "/web", jp, `[{"op":"remove","path":"/metadata/labels/a~1b"}]`, 200,
			func(t *testing.T, b []byte) {
				if l := decodeDeployment(t, b).Labels; len(l) != 0 {
					t.Errorf("labels = %v; want none", l)
				}
			}, ""},
		{"json patch: failed test names the operation", deps + "/web", jp,
			`[{"op":"replace","path":"/spec/replicas","value":1},{"op":"test","path":"/spec/replicas","value":9}]`, 400, nil, `json patch operation 1 (test \"/spec/replicas\"): test failed`},
		{"json patch: missing path", deps + "/web", jp, `[{"op":"remove","path":"/spec/nope"}]`, 400, nil, "path not found"},
		{"json patch: not an array", deps + "/web", jp, `{}`, 400, nil, "must be an array"},
		{"json patch: result is invalid", deps + "/web", jp, `[{"op":"replace","path":"/spec/replicas","value":-1}]`, 422, nil, "spec.replicas"},
		{"json patch: may not rename", deps + "/web", jp, `[{"op":"replace","path":"/metadata/name","value":"other"}]`, 400, nil, "may not change metadata.name"},
		{"merge patch: still works", deps + "/web", merge, `{"spec":{"replicas":3}}`, 200,
			func(t *testing.T, b []byte) {
				if r := decodeDeployment(t, b).Spec.Replicas; r == nil || *r != 3 {
					t.Errorf("replicas = %v; want 3", r)
				}
			}, ""},
		{"merge patch: not an object", deps + "/web", merge, `[1]`, 400, nil, "a merge patch must be a JSON object"},
		{"merge patch: malformed", deps + "/web", merge, `{"spec":`, 400, nil, "malformed merge patch"},
		{"server-side apply is refused", deps + "/web", "application/apply-patch+yaml", "spec: {}", 415, nil, "application/strategic-merge-patch+json"},
		{"plain JSON is refused", deps + "/web", "application/json", `{}`, 415, nil, "application/json-patch+json"},
	}
	for _, tt := range tests {
		code, b := h.do("PATCH", tt.path, tt.ctype, tt.body)
		if code != tt.wantCode {
			t.Errorf("%s: PATCH %s = %d %s; want %d", tt.name, tt.path, code, trim(b), tt.wantCode)
			continue
		}
		if tt.check != nil {
			tt.check(t, b)
			continue
		}
		st := decodeStatus(t, b)
		if st.Code != int32(tt.wantCode) || !strings.Contains(string(b), tt.wantInBody) {
			t.Errorf("%s: PATCH %s = %d %s; want a Status containing %s", tt.name, tt.path, code, trim(b), tt.wantInBody)
		}
	}
}

func decodeDeployment(t *testing.T, b []byte) api.Deployment {
	t.Helper()
	var d api.Deployment
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("decode deployment %s: %v", trim(b), err)
	}
	return d
}
