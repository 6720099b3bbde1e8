package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// TestNodeMirrorPodMayNotReferenceAPIObjectsRealTLS is defect 1 of issue
// 16: a node created a mirror pod bound to itself that referenced a
// secret (or configmap), and could then read that object.
func TestNodeMirrorPodMayNotReferenceAPIObjectsRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "a", "")
	h.mustDo("POST", "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, "a"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/secrets", admin, fmt.Sprintf(secretJSON, "topsecret"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", admin, `{"metadata":{"name":"topcm"},"data":{"k":"v"}}`, http.StatusCreated)

	const head = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","annotations":{"skiff.io/mirror":"x"}},"spec":{"nodeName":"a",`
	tests := []struct{ name, spec string }{
		{"secret volume", `"containers":[{"name":"c","image":"busybox"}],"volumes":[{"name":"v","secret":{"secretName":"topsecret"}}]}}`},
		{"configmap volume", `"containers":[{"name":"c","image":"busybox"}],"volumes":[{"name":"v","configMap":{"name":"topcm"}}]}}`},
		{"envFrom configmap", `"containers":[{"name":"c","image":"busybox","envFrom":[{"configMapRef":{"name":"topcm"}}]}]}}`},
		{"envFrom secret", `"containers":[{"name":"c","image":"busybox","envFrom":[{"secretRef":{"name":"topsecret"}}]}]}}`},
		{"env secretKeyRef", `"containers":[{"name":"c","image":"busybox","env":[{"name":"X","valueFrom":{"secretKeyRef":{"name":"topsecret","key":"k"}}}]}]}}`},
		{"init env configMapKeyRef", `"initContainers":[{"name":"i","image":"busybox","env":[{"name":"X","valueFrom":{"configMapKeyRef":{"name":"topcm","key":"k"}}}]}],"containers":[{"name":"c","image":"busybox"}]}}`},
		{"image pull secret", `"containers":[{"name":"c","image":"busybox"}],"imagePullSecrets":[{"name":"topsecret"}]}}`},
		{"service account", `"containers":[{"name":"c","image":"busybox"}],"serviceAccountName":"builder"}}`},
		{"owner other than its node", `"containers":[{"name":"c","image":"busybox"}]},"metadata":{"name":"mo","annotations":{"skiff.io/mirror":"x"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"u1"}]}}`},
	}
	for i, tt := range tests {
		body := fmt.Sprintf(head, fmt.Sprintf("m%d", i)) + tt.spec
		code, b := h.do("POST", "/api/v1/namespaces/default/pods", cred, body)
		if code != http.StatusForbidden {
			t.Errorf("node a: create mirror pod with %s = %d %s; want 403", tt.name, code, b)
		}
	}
	for _, path := range []string{"/api/v1/namespaces/default/secrets/topsecret", "/api/v1/namespaces/default/configmaps/topcm"} {
		if code, b := h.do("GET", path, cred, ""); code != http.StatusForbidden {
			t.Errorf("node a: GET %s after the mirror attempts = %d %s; want 403", path, code, b)
		}
	}
	// A mirror pod that references nothing of the API still works, with
	// the downward API and host paths.
	ok := fmt.Sprintf(head, "fine") + `"containers":[{"name":"c","image":"busybox","env":[{"name":"N","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}]}],"volumes":[{"name":"h","hostPath":{"path":"/tmp"}},{"name":"e","emptyDir":{}}]}}`
	h.mustDo("POST", "/api/v1/namespaces/default/pods", cred, ok, http.StatusCreated)

	// A mirror pod slipped into the store by other means (an older server)
	// still does not make a secret readable.
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(head, "old")+tests[0].spec, http.StatusCreated)
	if code, b := h.do("GET", "/api/v1/namespaces/default/secrets/topsecret", cred, ""); code != http.StatusForbidden {
		t.Errorf("node a: GET a secret referenced only by a mirror pod = %d %s; want 403", code, b)
	}
}

// TestNodeSelfLabelsRealTLS is defect 2 of issue 16: a node could label
// its own Node with anything, such as the control-plane role, and attract
// workloads that select it.
func TestNodeSelfLabelsRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, cred := h.join(h.joinToken(), "a", "")
	nodeWith := func(name, labels string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":{%s}}}`, name, labels)
	}
	// Registration with a forbidden label is refused; with allowed ones it works.
	if code, b := h.do("POST", "/api/v1/nodes", cred, nodeWith("a", `"node-role.kubernetes.io/control-plane":""`)); code != http.StatusForbidden {
		t.Fatalf("node a: register with a control-plane label = %d %s; want 403", code, b)
	}
	if code, b := h.do("POST", "/api/v1/nodes", cred, `{"metadata":{"name":"a"},"spec":{"podCIDR":"10.42.7.0/24"}}`); code != http.StatusForbidden {
		t.Fatalf("node a: register choosing its own pod CIDR = %d %s; want 403", code, b)
	}
	h.mustDo("POST", "/api/v1/nodes", cred, nodeWith("a", `"kubernetes.io/hostname":"a","kubernetes.io/arch":"arm64","topology.kubernetes.io/zone":"z1","node.kubernetes.io/instance-type":"pi4","kubelet.kubernetes.io/x":"y"`), http.StatusCreated)
	// An admin's reserved label stays; the node may not change or remove it.
	h.mustDo("PATCH", "/api/v1/nodes/a", admin, `{"metadata":{"labels":{"node-role.kubernetes.io/worker":""}}}`, http.StatusOK)

	tests := []struct {
		name, method, body string
		want               int
	}{
		{"control-plane role", "PATCH", `{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`, 403},
		{"node-restriction prefix", "PATCH", `{"metadata":{"labels":{"node-restriction.kubernetes.io/trusted":"yes"}}}`, 403},
		{"other kubernetes.io label", "PATCH", `{"metadata":{"labels":{"example.kubernetes.io/x":"y"}}}`, 403},
		{"k8s.io label", "PATCH", `{"metadata":{"labels":{"k8s.io/x":"y"}}}`, 403},
		{"change an admin's reserved label", "PATCH", `{"metadata":{"labels":{"node-role.kubernetes.io/worker":"x"}}}`, 403},
		{"remove an admin's reserved label", "PATCH", `{"metadata":{"labels":{"node-role.kubernetes.io/worker":null}}}`, 403},
		{"label outside the reserved domains (as Kubernetes)", "PATCH", `{"metadata":{"labels":{"gpu":"yes","example.com/rack":"r1"}}}`, 200},
		{"change its pod CIDR (validation refuses it for everyone)", "PATCH", `{"spec":{"podCIDR":"10.42.200.0/24","podCIDRs":["10.42.200.0/24"]}}`, 422},
		{"zone label", "PATCH", `{"metadata":{"labels":{"topology.kubernetes.io/zone":"z2","failure-domain.beta.kubernetes.io/region":"r"}}}`, 200},
		{"kubelet prefix", "PATCH", `{"metadata":{"labels":{"kubelet.kubernetes.io/a":"b","node.kubernetes.io/c":"d"}}}`, 200},
		{"os label", "PATCH", `{"metadata":{"labels":{"kubernetes.io/os":"linux","beta.kubernetes.io/arch":"arm64"}}}`, 200},
		{"unschedulable", "PATCH", `{"spec":{"unschedulable":true}}`, 200},
	}
	for _, tt := range tests {
		code, b := h.do(tt.method, "/api/v1/nodes/a", cred, tt.body)
		if code != tt.want {
			t.Errorf("node a: %s own Node (%s) = %d %s; want %d", tt.method, tt.name, code, b, tt.want)
		}
	}
	// A PUT of the node as read, with a new forbidden label, is refused too.
	var n api.Node
	if err := json.Unmarshal(h.mustDo("GET", "/api/v1/nodes/a", cred, "", http.StatusOK), &n); err != nil {
		t.Fatal(err)
	}
	n.Labels["node-role.kubernetes.io/master"] = ""
	b, _ := json.Marshal(&n)
	if code, out := h.do("PUT", "/api/v1/nodes/a", cred, string(b)); code != http.StatusForbidden {
		t.Errorf("node a: PUT own Node with a master role label = %d %s; want 403", code, out)
	}
	if code, out := h.do("PATCH", "/api/v1/nodes/a", admin, `{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`); code != http.StatusOK {
		t.Errorf("admin: label node a control-plane = %d %s; want 200", code, out)
	}
}
