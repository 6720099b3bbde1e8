package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func TestSelfReviewsRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	h.mustDo("POST", "/api/v1/namespaces", admin, `{"metadata":{"name":"team"}}`, http.StatusCreated)
	viewer := h.serviceAccountWith(admin, "team", "alice", "RoleBinding", "view")
	_, node := h.join(h.joinToken(), "n1", "")

	ssar := func(tok, attrs string) api.SelfSubjectAccessReview {
		t.Helper()
		b := h.mustDo("POST", selfSubjectAccessReviewPath, tok, `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":`+attrs+`}`, http.StatusCreated)
		var r api.SelfSubjectAccessReview
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		who, tok, attrs string
		want            bool
	}{
		{"viewer", viewer, `{"resourceAttributes":{"namespace":"team","verb":"list","resource":"pods"}}`, true},
		{"viewer", viewer, `{"resourceAttributes":{"namespace":"team","verb":"get","resource":"secrets"}}`, false},
		{"viewer", viewer, `{"resourceAttributes":{"namespace":"default","verb":"list","resource":"pods"}}`, false},
		{"viewer", viewer, `{"resourceAttributes":{"namespace":"team","verb":"delete","group":"apps","resource":"deployments"}}`, false},
		{"viewer", viewer, `{"nonResourceAttributes":{"path":"/metrics","verb":"get"}}`, false},
		{"viewer", viewer, `{"nonResourceAttributes":{"path":"/api","verb":"get"}}`, true},
		{"admin", admin, `{"resourceAttributes":{"verb":"delete","resource":"nodes"}}`, true},
		{"node", node, `{"resourceAttributes":{"verb":"list","resource":"nodes"}}`, true},
		{"node", node, `{"resourceAttributes":{"verb":"list","resource":"secrets","namespace":"team"}}`, false},
	}
	for _, tt := range tests {
		if r := ssar(tt.tok, tt.attrs); r.Status.Allowed != tt.want {
			t.Errorf("%s: SelfSubjectAccessReview(%s) = %+v; want allowed=%v", tt.who, tt.attrs, r.Status, tt.want)
		}
	}

	whoami := func(tok string) api.UserInfo {
		t.Helper()
		var r api.SelfSubjectReview
		if err := json.Unmarshal(h.mustDo("POST", selfSubjectReviewPath, tok, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`, http.StatusCreated), &r); err != nil {
			t.Fatal(err)
		}
		return r.Status.UserInfo
	}
	if u := whoami(viewer); u.Username != "system:serviceaccount:team:alice" || u.UID == "" || len(u.Groups) != 3 {
		t.Errorf("whoami(viewer) = %+v", u)
	}
	if u := whoami(admin); u.Username != "skiff:admin" {
		t.Errorf("whoami(admin) = %+v", u)
	}
	if u := whoami(node); u.Username != "system:node:n1" {
		t.Errorf("whoami(node) = %+v", u)
	}
}

// TestServiceAccountTokensRealTLS: what a hostile node or viewer would
// try with tokens, and revocation by deleting the account.
func TestServiceAccountTokensRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	h.mustDo("POST", "/api/v1/namespaces", admin, `{"metadata":{"name":"team"}}`, http.StatusCreated)
	viewer := h.serviceAccountWith(admin, "team", "alice", "RoleBinding", "view")
	editor := h.serviceAccountWith(admin, "team", "bob", "RoleBinding", "edit")
	_, node := h.join(h.joinToken(), "n1", "")

	for _, tt := range []struct {
		who, tok string
		want     int
	}{
		{"viewer", viewer, http.StatusForbidden},
		{"node", node, http.StatusForbidden},
		{"editor", editor, http.StatusCreated},
	} {
		if code, b := h.do("POST", "/api/v1/namespaces/team/serviceaccounts/alice/token", tt.tok, `{"spec":{}}`); code != tt.want {
			t.Errorf("%s: request a token for alice = %d %.200s; want %d", tt.who, code, b, tt.want)
		}
	}
	if code, _ := h.do("POST", "/api/v1/namespaces/team/serviceaccounts/alice/token", admin, `{"spec":{"expirationSeconds":60}}`); code != http.StatusUnprocessableEntity {
		t.Errorf("a token for 60s = %d; want 422 (at least 10 minutes)", code)
	}
	if code, _ := h.do("POST", "/api/v1/namespaces/team/serviceaccounts/ghost/token", admin, `{"spec":{}}`); code != http.StatusNotFound {
		t.Errorf("a token for a missing account = %d; want 404", code)
	}
	// /metrics only with a role granting it.
	if code, _ := h.do("GET", "/metrics", viewer, ""); code != http.StatusForbidden {
		t.Errorf("viewer GET /metrics = %d; want 403", code)
	}
	h.mustDo("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", admin, `{"metadata":{"name":"metrics-reader"},"rules":[{"verbs":["get"],"nonResourceURLs":["/metrics"]}]}`, http.StatusCreated)
	h.mustDo("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", admin, `{"metadata":{"name":"alice-metrics"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"metrics-reader"},"subjects":[{"kind":"ServiceAccount","name":"alice","namespace":"team"}]}`, http.StatusCreated)
	h.mustDo("GET", "/metrics", viewer, "", http.StatusOK)
	if code, _ := h.do("GET", "/metrics", node, ""); code != http.StatusForbidden {
		t.Errorf("node GET /metrics = %d; want 403", code)
	}
	// Expiry on the server's clock.
	h.mustDo("GET", "/api/v1/namespaces/team/pods", viewer, "", http.StatusOK)
	h.clk.Advance(2 * time.Hour)
	if code, _ := h.do("GET", "/api/v1/namespaces/team/pods", viewer, ""); code != http.StatusUnauthorized {
		t.Errorf("an expired token = %d; want 401", code)
	}
	// Revocation: deleting the account.
	var tr api.TokenRequest
	json.Unmarshal(h.mustDo("POST", "/api/v1/namespaces/team/serviceaccounts/bob/token", admin, `{"spec":{}}`, http.StatusCreated), &tr)
	h.mustDo("GET", "/api/v1/namespaces/team/pods", tr.Status.Token, "", http.StatusOK)
	h.mustDo("DELETE", "/api/v1/namespaces/team/serviceaccounts/bob", admin, "", http.StatusOK)
	if code, _ := h.do("GET", "/api/v1/namespaces/team/pods", tr.Status.Token, ""); code != http.StatusUnauthorized {
		t.Errorf("a token of a deleted account = %d; want 401", code)
	}
	h.mustDo("POST", "/api/v1/namespaces/team/serviceaccounts", admin, `{"metadata":{"name":"bob"}}`, http.StatusCreated)
	if code, _ := h.do("GET", "/api/v1/namespaces/team/pods", tr.Status.Token, ""); code != http.StatusUnauthorized {
		t.Errorf("a token of an account deleted and made again = %d; want 401", code)
	}
}
