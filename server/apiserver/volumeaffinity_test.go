package apiserver

import (
	"strings"
	"testing"
)

// TestPodPinnedToItsVolumesNode: a pod created with a claim bound to a
// node-pinned volume gets a required node affinity for that node; a pod
// with an unbound claim or already bound to a node does not.
func TestPodPinnedToItsVolumesNode(t *testing.T) {
	h := newHarness(t)
	must := func(method, path, body string, want int) string {
		t.Helper()
		code, b := h.do(method, path, "application/json", body)
		if code != want {
			t.Fatalf("%s %s = %d %s; want %d", method, path, code, b, want)
		}
		return string(b)
	}
	must("POST", "/api/v1/persistentvolumes", `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv-a"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/srv/a"},`+
		`"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["edge-a"]}]}]}}}}`, 201)
	for _, c := range []string{"bound", "pending"} {
		must("POST", "/api/v1/namespaces/default/persistentvolumeclaims", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"`+c+`"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`, 201)
	}
	if code, b := h.do("PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/bound", "application/merge-patch+json", `{"spec":{"volumeName":"pv-a"}}`); code != 200 {
		t.Fatalf("bind claim = %d %s", code, b)
	}
	if code, b := h.do("PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/bound", "application/merge-patch+json", `{"spec":{"accessModes":["ReadWriteMany"]}}`); code != 422 {
		t.Errorf("change a claim's access modes = %d %s; want 422", code, b)
	}
	if code, b := h.do("PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/bound", "application/merge-patch+json", `{"spec":{"volumeName":"pv-b"}}`); code != 422 {
		t.Errorf("rebind a bound claim = %d %s; want 422", code, b)
	}
	pod := func(name, claim, extra string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{` + extra + `"containers":[{"name":"c","image":"busybox"}],"volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"` + claim + `"}}]}}`
	}
	if b := must("POST", "/api/v1/namespaces/default/pods", pod("uses-bound", "bound", ""), 201); !strings.Contains(b, `"values":["edge-a"]`) {
		t.Errorf("pod with a bound claim = %s; want a node affinity for edge-a", b)
	}
	if b := must("POST", "/api/v1/namespaces/default/pods", pod("uses-pending", "pending", ""), 201); strings.Contains(b, "affinity") {
		t.Errorf("pod with an unbound claim = %s; want no affinity", b)
	}
	withTerm := `"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["x"]}]}]}}},`
	if b := must("POST", "/api/v1/namespaces/default/pods", pod("with-term", "bound", withTerm), 201); !strings.Contains(b, `"key":"zone"`) || !strings.Contains(b, `"values":["edge-a"]`) {
		t.Errorf("pod with its own affinity = %s; want both requirements", b)
	}
}
