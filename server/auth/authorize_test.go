package auth_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/server/auth"
)

var (
	nodeA = auth.Identity{Node: "node-a"}
	anon  = auth.Identity{}
	root  = auth.Identity{Admin: true}
)

// req builds a Request: verb resource[/sub] [ns/]name.
func req(verb auth.Verb, resource, ns, name string) auth.Request {
	r := auth.Request{Verb: verb, Resource: resource, Namespace: ns, Name: name}
	if res, sub, ok := strings.Cut(resource, "/"); ok {
		r.Resource, r.Subresource = res, sub
	}
	return r
}

func with(r auth.Request, f func(*auth.Request)) auth.Request { f(&r); return r }

func boundTo(node string) func(*auth.Request) {
	return func(r *auth.Request) { r.BoundToNode = node }
}

func selector(field, value string) func(*auth.Request) {
	return func(r *auth.Request) { r.FieldSelector = map[string]string{field: value} }
}

func referenced(r *auth.Request) { r.ReferencedByNodePods = true }
func mirror(r *auth.Request)     { r.IsMirrorForSelf = true }

func TestAuthorizeNode(t *testing.T) {
	const (
		get, list, watch, create = auth.VerbGet, auth.VerbList, auth.VerbWatch, auth.VerbCreate
		update, patch, del       = auth.VerbUpdate, auth.VerbPatch, auth.VerbDelete
	)
	tests := []struct {
		req    auth.Request
		allow  bool
		reason string // substring of the reason, for denials
	}{
		// Its own Node, and only its own.
		{req(get, "nodes", "", "node-a"), true, ""},
		{req(update, "nodes", "", "node-a"), true, ""},
		{req(patch, "nodes", "", "node-a"), true, ""},
		{req(get, "nodes/status", "", "node-a"), true, ""},
		{req(update, "nodes/status", "", "node-a"), true, ""},
		{req(patch, "nodes/status", "", "node-a"), true, ""},
		{req(create, "nodes", "", "node-a"), true, ""},
		{req(del, "nodes", "", "node-a"), false, `node "node-a" may not delete nodes`},
		{req(get, "nodes", "", "node-b"), true, ""}, // read-only, for the overlay
		{req(get, "nodes/status", "", "node-b"), false, `node "node-a" may not get nodes/status "node-b"`},
		{req(update, "nodes/status", "", "node-b"), false, `may not update nodes/status "node-b"`},
		{req(patch, "nodes", "", "node-b"), false, `"node-b"`},
		{req(create, "nodes", "", "node-b"), false, `"node-b"`},
		{req(create, "nodes/status", "", "node-a"), false, "may not create nodes/status"},
		// Every Node may be listed and watched (read-only) for the overlay.
		{req(list, "nodes", "", ""), true, ""},
		{req(watch, "nodes", "", ""), true, ""},
		{with(req(watch, "nodes", "", ""), selector("metadata.name", "node-a")), true, ""},
		{with(req(watch, "nodes", "", ""), selector("metadata.name", "node-b")), true, ""},
		{req(list, "nodes/status", "", ""), false, "may not list nodes/status"},

		// Pods bound to it.
		{with(req(get, "pods", "default", "p"), boundTo("node-a")), true, ""},
		{with(req(get, "pods/status", "default", "p"), boundTo("node-a")), true, ""},
		{with(req(get, "pods", "default", "p"), boundTo("node-b")), false, `node "node-a" may not get pods bound to node "node-b"`},
		{with(req(get, "pods", "default", "p"), boundTo("")), false, `node "node-a" may not get pods not bound to it`},
		{with(req(get, "pods/log", "default", "p"), boundTo("node-a")), false, "may not get pods/log"},
		{with(req(create, "pods/exec", "default", "p"), boundTo("node-a")), false, "may not create pods/exec"},
		{with(req(create, "pods/attach", "default", "p"), boundTo("node-a")), false, "may not create pods/attach"},
		{with(req(create, "pods/portforward", "default", "p"), boundTo("node-a")), false, "may not create pods/portforward"},
		{with(req(update, "pods/status", "default", "p"), boundTo("node-a")), true, ""},
		{with(req(patch, "pods/status", "default", "p"), boundTo("node-a")), true, ""},
		{with(req(update, "pods/status", "default", "p"), boundTo("node-b")), false, `may not update pods/status bound to node "node-b"`},
		{with(req(patch, "pods/status", "default", "p"), boundTo("")), false, "not bound to it"},
		{with(req(update, "pods", "default", "p"), boundTo("node-a")), false, "may not update pods, only pods/status"},
		{with(req(patch, "pods", "default", "p"), boundTo("node-a")), false, "may not patch pods, only pods/status"},
		{with(req(del, "pods", "default", "p"), boundTo("node-a")), true, ""},
		{with(req(del, "pods", "default", "p"), boundTo("node-b")), false, `may not delete pods bound to node "node-b"`},
		{with(req(del, "pods/status", "default", "p"), boundTo("node-a")), false, "may not delete pods/status"},
		{with(req(create, "pods", "default", "p"), mirror), true, ""},
		{req(create, "pods", "default", "p"), false, "may create only mirror pods bound to itself"},
		{with(req(create, "pods/status", "default", "p"), mirror), false, "may create only mirror pods"},

		// Lists and watches of pods need spec.nodeName=<self>.
		{req(list, "pods", "", ""), false, "may list pods only with fieldSelector spec.nodeName=node-a"},
		{req(watch, "pods", "default", ""), false, "may watch pods only with fieldSelector spec.nodeName=node-a"},
		{with(req(list, "pods", "", ""), selector("spec.nodeName", "node-a")), true, ""},
		{with(req(watch, "pods", "default", ""), selector("spec.nodeName", "node-a")), true, ""},
		{with(req(list, "pods", "", ""), selector("spec.nodeName", "node-b")), false, "only with fieldSelector"},
		{with(req(list, "pods", "", ""), selector("metadata.name", "p")), false, "only with fieldSelector"},

		// Secrets and configmaps its pods reference.
		{with(req(get, "secrets", "default", "s"), referenced), true, ""},
		{with(req(get, "configmaps", "default", "c"), referenced), true, ""},
		{req(get, "secrets", "default", "s"), false, `node "node-a" may not get secrets not referenced by pods bound to it`},
		{req(get, "configmaps", "default", "c"), false, "not referenced by pods bound to it"},
		{with(req(list, "secrets", "default", ""), referenced), false, "only in one namespace with fieldSelector metadata.name=<name>"},
		{with(with(req(watch, "configmaps", "default", ""), selector("metadata.name", "c")), referenced), true, ""},
		{with(req(watch, "configmaps", "default", ""), selector("metadata.name", "c")), false, "not referenced"},
		{with(with(req(list, "secrets", "", ""), selector("metadata.name", "s")), referenced), false, "only in one namespace"},
		{with(req(update, "secrets", "default", "s"), referenced), false, "may not update secrets"},
		{with(req(create, "configmaps", "default", "c"), referenced), false, "may not create configmaps"},
		{with(req(del, "secrets", "default", "s"), referenced), false, "may not delete secrets"},

		// Events in any namespace, write only.
		{req(create, "events", "default", ""), true, ""},
		{req(create, "events", "kube-system", ""), true, ""},
		{req(update, "events", "default", "e"), true, ""},
		{req(patch, "events", "default", "e"), true, ""},
		{req(get, "events", "default", "e"), false, "may not get events"},
		{req(list, "events", "", ""), false, "may not list events"},
		{req(del, "events", "default", "e"), false, "may not delete events"},

		// Namespaces: get only.
		{req(get, "namespaces", "", "default"), true, ""},
		{req(list, "namespaces", "", ""), false, "may not list namespaces"},
		{req(create, "namespaces", "", "x"), false, "may not create namespaces"},
		{req(del, "namespaces", "", "default"), false, "may not delete namespaces"},

		// Services and EndpointSlices: read-only, every namespace.
		{req(get, "services", "default", "web"), true, ""},
		{req(list, "services", "", ""), true, ""},
		{req(watch, "endpointslices", "", ""), true, ""},
		{req(create, "services", "default", "web"), false, "may not create services"},
		{req(update, "endpointslices", "default", "web-x"), false, "may not update endpointslices"},
		{req(patch, "services", "default", "web"), false, "may not patch services"},
		{req(del, "endpointslices", "default", "web-x"), false, "may not delete endpointslices"},
		{req(update, "services/status", "default", "web"), false, "may not update services/status"},
		{req(list, "endpoints", "", ""), false, "may not list endpoints"},

		// Nothing else.
		{req(get, "deployments", "default", "d"), false, "may not get deployments"},
		{req(list, "daemonsets", "", ""), false, "may not list daemonsets"},
		{req(create, "deployments", "default", "d"), false, "may not create deployments"},
		{req(get, "widgets", "default", "w"), false, "may not get widgets"},
		{req("escalate", "pods", "default", "p"), false, "may not escalate pods"},
	}
	for _, tt := range tests {
		got := auth.Authorize(nodeA, tt.req)
		if got.Allowed != tt.allow {
			t.Errorf("Authorize(node-a, %s) = %v (%q); want allowed %v", describe(tt.req), got.Allowed, got.Reason, tt.allow)
			continue
		}
		if got.Reason == "" {
			t.Errorf("Authorize(node-a, %s) has no reason", describe(tt.req))
		}
		if !tt.allow && !strings.Contains(got.Reason, tt.reason) {
			t.Errorf("Authorize(node-a, %s).Reason = %q; want it to contain %q", describe(tt.req), got.Reason, tt.reason)
		}
		// Decisions depend on names only through who is asking: the mirror
		// image (node-a and node-b swapped everywhere) gets the mirror
		// decision.
		mr := swapNodes(tt.req)
		b := auth.Authorize(auth.Identity{Node: "node-b"}, mr)
		if b.Allowed != got.Allowed || b.Reason != swapNodeNames(got.Reason) {
			t.Errorf("Authorize(node-b, %s) = %v (%q); want the mirror of node-a's, %v (%q)",
				describe(mr), b.Allowed, b.Reason, got.Allowed, swapNodeNames(got.Reason))
		}
	}
}

var nodeSwapper = strings.NewReplacer("node-a", "node-b", "node-b", "node-a")

func swapNodeNames(s string) string { return nodeSwapper.Replace(s) }

func swapNodes(r auth.Request) auth.Request {
	r.Name, r.BoundToNode = swapNodeNames(r.Name), swapNodeNames(r.BoundToNode)
	if r.FieldSelector != nil {
		m := make(map[string]string, len(r.FieldSelector))
		for k, v := range r.FieldSelector {
			m[k] = swapNodeNames(v)
		}
		r.FieldSelector = m
	}
	return r
}

func describe(r auth.Request) string {
	s := fmt.Sprintf("%s %s", r.Verb, r.Resource)
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	if r.Namespace != "" || r.Name != "" {
		s += " " + r.Namespace + "/" + r.Name
	}
	if r.BoundToNode != "" {
		s += " bound=" + r.BoundToNode
	}
	if len(r.FieldSelector) > 0 {
		s += fmt.Sprintf(" fields=%v", r.FieldSelector)
	}
	if r.ReferencedByNodePods {
		s += " referenced"
	}
	if r.IsMirrorForSelf {
		s += " mirror"
	}
	return s
}

func TestAuthorizeAdminAndAnonymous(t *testing.T) {
	var all []auth.Request
	verbs := []auth.Verb{auth.VerbGet, auth.VerbList, auth.VerbWatch, auth.VerbCreate, auth.VerbUpdate, auth.VerbPatch, auth.VerbDelete}
	resources := []string{"pods", "pods/status", "pods/log", "nodes", "nodes/status", "secrets", "configmaps", "events", "namespaces", "deployments", "daemonsets"}
	for _, v := range verbs {
		for _, r := range resources {
			all = append(all, req(v, r, "default", "x"), with(req(v, r, "default", "x"), boundTo("node-b")))
		}
	}
	for _, r := range all {
		if d := auth.Authorize(root, r); !d.Allowed {
			t.Errorf("Authorize(admin, %s) = denied (%q); want allowed", describe(r), d.Reason)
		}
		if d := auth.Authorize(anon, r); d.Allowed || d.Reason != "anonymous requests are not allowed" {
			t.Errorf("Authorize(anonymous, %s) = %v (%q); want denied", describe(r), d.Allowed, d.Reason)
		}
	}
	// Facts never grant an anonymous request.
	r := with(with(req(auth.VerbGet, "secrets", "default", "s"), referenced), boundTo(""))
	if auth.Authorize(anon, r).Allowed {
		t.Error("Authorize(anonymous, referenced secret) allowed")
	}
}
