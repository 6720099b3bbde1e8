package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// matrixResource is one resource of the RBAC matrix with a fixture.
type matrixResource struct {
	group, resource string
	namespaced      bool
	fixture         func(name string) string // a valid object named name
}

func (m matrixResource) path(ns, name string) string {
	p := "/api/v1"
	if m.group != "" {
		p = "/apis/" + m.group + "/v1"
	}
	if m.namespaced {
		p += "/namespaces/" + ns
	}
	p += "/" + m.resource
	if name != "" {
		p += "/" + name
	}
	return p
}

var matrixResources = []matrixResource{
	{"", "pods", true, func(n string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, n)
	}},
	{"", "configmaps", true, func(n string) string { return fmt.Sprintf(`{"metadata":{"name":%q},"data":{"k":"v"}}`, n) }},
	{"", "secrets", true, func(n string) string { return fmt.Sprintf(`{"metadata":{"name":%q},"stringData":{"k":"v"}}`, n) }},
	{"", "serviceaccounts", true, func(n string) string { return fmt.Sprintf(`{"metadata":{"name":%q}}`, n) }},
	{"", "events", true, func(n string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"involvedObject":{"kind":"Pod","name":"x"},"reason":"R","message":"m","type":"Normal"}`, n)
	}},
	{"apps", "deployments", true, func(n string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, n)
	}},
	{"apps", "daemonsets", true, func(n string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, n)
	}},
	{"rbac.authorization.k8s.io", "roles", true, func(n string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]}`, n)
	}},
	{"rbac.authorization.k8s.io", "rolebindings", true, func(n string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"nobody","namespace":"team"}]}`, n)
	}},
	{"", "nodes", false, func(n string) string { return fmt.Sprintf(`{"metadata":{"name":%q}}`, n) }},
	{"", "namespaces", false, func(n string) string { return fmt.Sprintf(`{"metadata":{"name":%q}}`, n) }},
	{"rbac.authorization.k8s.io", "clusterroles", false, func(n string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]}`, n)
	}},
	{"rbac.authorization.k8s.io", "clusterrolebindings", false, func(n string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"nobody"}]}`, n)
	}},
}

// expectAllowed is the matrix's answer key, written from Kubernetes'
// documented roles (not from the code under test): what a role bound in
// namespace team by a RoleBinding (cluster-admin: by a
// ClusterRoleBinding) may do to resource in namespace ns.
func expectAllowed(role, resource, verb, ns string) bool {
	read := verb == "get" || verb == "list" || verb == "watch"
	switch role {
	case "cluster-admin":
		return true
	case "none":
		return false
	}
	if ns != "team" {
		return false // cluster-scoped, or another namespace
	}
	switch resource {
	case "pods", "configmaps", "events", "serviceaccounts", "deployments", "daemonsets":
		return read || role != "view"
	case "secrets":
		return role != "view"
	case "roles", "rolebindings":
		return role == "admin"
	}
	return false
}

// TestRBACMatrixRealTLS runs every built-in role against every resource
// and verb through the real server, with service account tokens from
// TokenRequest.
func TestRBACMatrixRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	for _, ns := range []string{"team", "other"} {
		h.mustDo("POST", "/api/v1/namespaces", admin, fmt.Sprintf(`{"metadata":{"name":%q}}`, ns), http.StatusCreated)
	}
	roles := []string{"view", "edit", "admin", "cluster-admin", "none"}
	tokens := map[string]string{}
	for _, role := range roles {
		sa := "sa-" + role
		h.mustDo("POST", "/api/v1/namespaces/team/serviceaccounts", admin, fmt.Sprintf(`{"metadata":{"name":%q}}`, sa), http.StatusCreated)
		subject := fmt.Sprintf(`{"kind":"ServiceAccount","name":%q,"namespace":"team"}`, sa)
		switch role {
		case "cluster-admin":
			h.mustDo("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", admin,
				fmt.Sprintf(`{"metadata":{"name":"b-%s"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":%q},"subjects":[%s]}`, role, role, subject), http.StatusCreated)
		case "none":
		default:
			h.mustDo("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings", admin,
				fmt.Sprintf(`{"metadata":{"name":"b-%s"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":%q},"subjects":[%s]}`, role, role, subject), http.StatusCreated)
		}
		b := h.mustDo("POST", "/api/v1/namespaces/team/serviceaccounts/"+sa+"/token", admin, `{"spec":{"expirationSeconds":3600}}`, http.StatusCreated)
		var tr api.TokenRequest
		if err := json.Unmarshal(b, &tr); err != nil || tr.Status.Token == "" {
			t.Fatalf("TokenRequest answer %s: %v", b, err)
		}
		tokens[role] = tr.Status.Token
	}

	for _, role := range roles {
		tok := tokens[role]
		for _, m := range matrixResources {
			nss := []string{""}
			if m.namespaced {
				nss = []string{"team", "other"}
			}
			for _, ns := range nss {
				fix := "fix-" + role
				h.mustDo("POST", m.path(ns, ""), admin, m.fixture(fix), http.StatusCreated)
				check := func(verb string, code int, b []byte) {
					t.Helper()
					want := expectAllowed(role, m.resource, verb, ns)
					if got := code != http.StatusForbidden; got != want || code == http.StatusUnauthorized {
						t.Errorf("%s: %s %s in %q = %d %.200s; want allowed=%v", role, verb, m.resource, ns, code, b, want)
					}
				}
				code, b := h.do("GET", m.path(ns, fix), tok, "")
				check("get", code, b)
				code, b = h.do("GET", m.path(ns, ""), tok, "")
				check("list", code, b)
				code = h.watchCode(m.path(ns, "")+"?watch=true", tok)
				check("watch", code, nil)
				code, b = h.do("POST", m.path(ns, ""), tok, m.fixture("new-"+role))
				check("create", code, b)
				code, b = h.do("PATCH", m.path(ns, fix), tok, `{"metadata":{"labels":{"patched":"yes"}}}`)
				check("patch", code, b)
				cur := h.mustDo("GET", m.path(ns, fix), admin, "", http.StatusOK)
				code, b = h.do("PUT", m.path(ns, fix), tok, string(cur))
				check("update", code, b)
				code, b = h.do("DELETE", m.path(ns, fix)+"?gracePeriodSeconds=0", tok, "")
				check("delete", code, b)
				// Leave nothing behind for the next role.
				for _, n := range []string{fix, "new-" + role} {
					if code, b := h.do("DELETE", m.path(ns, n)+"?gracePeriodSeconds=0", admin, ""); code != http.StatusOK && code != http.StatusNotFound {
						t.Fatalf("cleanup %s %s: %d %s", m.resource, n, code, b)
					}
				}
			}
		}
		// A RoleBinding in team grants reading the namespace object team.
		code, _ := h.do("GET", "/api/v1/namespaces/team", tok, "")
		if want := role != "none"; (code == http.StatusOK) != want {
			t.Errorf("%s: GET namespace team = %d; want allowed=%v", role, code, want)
		}
	}
}

// watchCode starts a watch and returns its status code, then ends it.
func (h *harness) watchCode(path, token string) int {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", h.info.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRBACEscalationRealTLS: a namespace admin may not grant itself (or
// anyone) more than it has.
func TestRBACEscalationRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	h.mustDo("POST", "/api/v1/namespaces", admin, `{"metadata":{"name":"team"}}`, http.StatusCreated)
	tok := h.serviceAccountWith(admin, "team", "boss", "RoleBinding", "admin")
	tests := []struct {
		name, path, body string
		want             int
	}{
		{"bind cluster-admin in its namespace", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
			`{"metadata":{"name":"x"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"ServiceAccount","name":"boss","namespace":"team"}]}`, 403},
		{"a role with nodes", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles",
			`{"metadata":{"name":"r"},"rules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]}`, 403},
		{"a cluster role binding", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
			`{"metadata":{"name":"y"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"boss","namespace":"team"}]}`, 403},
		{"bind edit (within admin)", "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings",
			`{"metadata":{"name":"ok"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"ServiceAccount","name":"helper","namespace":"team"}]}`, 201},
	}
	for _, tt := range tests {
		if code, b := h.do("POST", tt.path, tok, tt.body); code != tt.want {
			t.Errorf("namespace admin: %s = %d %.200s; want %d", tt.name, code, b, tt.want)
		}
	}
}

// serviceAccountWith makes service account ns/name, binds role to it with
// a binding of kind, and returns a token for it.
func (h *harness) serviceAccountWith(admin, ns, name, kind, role string) string {
	h.t.Helper()
	h.mustDo("POST", "/api/v1/namespaces/"+ns+"/serviceaccounts", admin, fmt.Sprintf(`{"metadata":{"name":%q}}`, name), http.StatusCreated)
	b := fmt.Sprintf(`{"metadata":{"name":"%s-%s"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":%q},"subjects":[{"kind":"ServiceAccount","name":%q,"namespace":%q}]}`, name, role, role, name, ns)
	if kind == "RoleBinding" {
		h.mustDo("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings", admin, b, http.StatusCreated)
	} else {
		h.mustDo("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", admin, b, http.StatusCreated)
	}
	var tr api.TokenRequest
	if err := json.Unmarshal(h.mustDo("POST", "/api/v1/namespaces/"+ns+"/serviceaccounts/"+name+"/token", admin, `{"spec":{}}`, http.StatusCreated), &tr); err != nil {
		h.t.Fatal(err)
	}
	return tr.Status.Token
}
