package server

import (
	"net/http/httptest"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/auth"
)

// TestAdmitNodePodWritesCheckTheStoredPod: a node's update of a pod is
// admitted only when the stored version it replaces is bound to that
// node. Authorization read the pod earlier; one deleted and made again
// on another node in between must not take this node's write.
func TestAdmitNodePodWritesCheckTheStoredPod(t *testing.T) {
	s := &server{}
	pod := func(node string) *api.Pod {
		p := &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "web-0"}}
		p.Spec.NodeName = node
		return p
	}
	attrs := apiserver.Attributes{Verb: apiserver.VerbUpdate, Resource: "pods", Subresource: "status", Namespace: "default", Name: "web-0"}
	for _, tt := range []struct {
		name     string
		id       auth.Identity
		old      string
		admitted bool
	}{
		{"own pod", auth.Identity{Node: "edge-a", User: "system:node:edge-a"}, "edge-a", true},
		{"made again on another node", auth.Identity{Node: "edge-a", User: "system:node:edge-a"}, "edge-b", false},
		{"unbound", auth.Identity{Node: "edge-a", User: "system:node:edge-a"}, "", false},
		{"admin", auth.Identity{Admin: true, User: "admin"}, "edge-b", true},
	} {
		r := httptest.NewRequest("PUT", "/api/v1/namespaces/default/pods/web-0/status", nil)
		r = r.WithContext(withIdentity(r.Context(), tt.id))
		err := s.admit(r, attrs, pod(tt.old), pod(tt.old))
		if got := err == nil; got != tt.admitted {
			t.Errorf("%s: admit = %v; want admitted %v", tt.name, err, tt.admitted)
		}
		if err != nil && !api.IsForbidden(err) {
			t.Errorf("%s: admit = %v; want 403 Forbidden", tt.name, err)
		}
	}
}
