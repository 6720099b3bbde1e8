package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
)

const (
	nodeJSON    = `{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s"}}`
	secretJSON  = `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"%s"},"stringData":{"k":"v"}}`
	podOnJSON   = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s"},"spec":{"nodeName":"%s","containers":[{"name":"c","image":"busybox"}],"volumes":[{"name":"s","secret":{"secretName":"%s"}}]}}`
	mirrorJSON  = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","annotations":{"skiff.io/mirror":"x"}},"spec":{"nodeName":"%s","containers":[{"name":"c","image":"busybox"}]}}`
	statusPatch = `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`
)

func TestAuthenticationRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	tests := []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"bad token", "SKA1.0123456789abcdef0123456789abcdef", http.StatusUnauthorized},
		{"bad node credential", "SKN1.a.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", http.StatusUnauthorized},
		{"join token as bearer", h.joinToken(), http.StatusUnauthorized},
		{"admin", h.adminToken(), http.StatusOK},
	}
	for _, tt := range tests {
		code, b := h.do("GET", "/api/v1/pods", tt.token, "")
		if code != tt.want {
			t.Errorf("GET /api/v1/pods with %s = %d %s; want %d", tt.name, code, b, tt.want)
			continue
		}
		if tt.want == http.StatusUnauthorized {
			if st := statusOf(t, b); st.Reason != api.StatusReasonUnauthorized || st.Code != 401 {
				t.Errorf("GET /api/v1/pods with %s: Status %+v; want reason Unauthorized, code 401", tt.name, st)
			}
		}
	}
}

func TestNodeAuthorizationRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	code, credA := h.join(h.joinToken(), "a", "")
	if code != http.StatusOK || !strings.HasPrefix(credA, auth.NodeCredentialPrefix+".a.") {
		t.Fatalf("join as a = %d, %q; want 200 and a node credential", code, credA)
	}
	for _, n := range []string{"a", "b"} {
		h.mustDo("POST", "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, n), http.StatusCreated)
	}
	h.mustDo("POST", "/api/v1/namespaces/default/secrets", admin, fmt.Sprintf(secretJSON, "sa"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/secrets", admin, fmt.Sprintf(secretJSON, "sb"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(podOnJSON, "pa", "a", "sa"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(podOnJSON, "pb", "b", "sb"), http.StatusCreated)
	for _, n := range []string{"a", "b"} {
		h.mustDo("POST", "/api/v1/persistentvolumes", admin, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv`+n+`"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/srv/`+n+`"},`+
			`"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":["`+n+`"]}]}]}}}}`, http.StatusCreated)
	}
	for _, c := range []struct{ claim, pod, node string }{{"ca", "qa", "a"}, {"cb", "qb", "b"}} {
		h.mustDo("POST", "/api/v1/namespaces/default/persistentvolumeclaims", admin, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"`+c.claim+`"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`, http.StatusCreated)
		h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+c.pod+`"},"spec":{"nodeName":"`+c.node+`","containers":[{"name":"c","image":"busybox"}],"volumes":[{"name":"d","persistentVolumeClaim":{"claimName":"`+c.claim+`"}}]}}`, http.StatusCreated)
	}

	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"own node", "GET", "/api/v1/nodes/a", "", 200},
		{"own node status", "PATCH", "/api/v1/nodes/a/status", statusPatch, 200},
		{"own pods by field selector", "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Da", "", 200},
		{"own pod", "GET", "/api/v1/namespaces/default/pods/pa", "", 200},
		{"referenced secret", "GET", "/api/v1/namespaces/default/secrets/sa", "", 200},
		{"own mirror pod", "POST", "/api/v1/namespaces/default/pods", fmt.Sprintf(mirrorJSON, "ma", "a"), 201},
		{"get namespace", "GET", "/api/v1/namespaces/default", "", 200},

		{"other node (read-only, for the overlay)", "GET", "/api/v1/nodes/b", "", 200},
		{"all nodes (read-only, for the overlay)", "GET", "/api/v1/nodes", "", 200},
		{"update other node", "PATCH", "/api/v1/nodes/b", `{"metadata":{"labels":{"x":"y"}}}`, 403},
		{"delete other node", "DELETE", "/api/v1/nodes/b", "", 403},
		{"other node status", "PATCH", "/api/v1/nodes/b/status", statusPatch, 403},
		{"other node's pod", "GET", "/api/v1/namespaces/default/pods/pb", "", 403},
		{"other node's pod status", "PATCH", "/api/v1/namespaces/default/pods/pb/status", `{"status":{"phase":"Failed"}}`, 403},
		{"own pod status", "PATCH", "/api/v1/namespaces/default/pods/pa/status", `{"status":{"message":"mine"}}`, 200},
		{"missing pod", "GET", "/api/v1/namespaces/default/pods/nope", "", 403},
		{"all pods", "GET", "/api/v1/pods", "", 403},
		{"other node's pods", "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Db", "", 403},
		{"unreferenced secret", "GET", "/api/v1/namespaces/default/secrets/sb", "", 403},
		{"claim of own pod", "GET", "/api/v1/namespaces/default/persistentvolumeclaims/ca", "", 200},
		{"claim of other node's pod", "GET", "/api/v1/namespaces/default/persistentvolumeclaims/cb", "", 403},
		{"all claims", "GET", "/api/v1/namespaces/default/persistentvolumeclaims", "", 403},
		{"update own claim", "PATCH", "/api/v1/namespaces/default/persistentvolumeclaims/ca", `{"spec":{"volumeName":"x"}}`, 403},
		{"volumes", "GET", "/api/v1/persistentvolumes", "", 403},
		{"own volume", "GET", "/api/v1/persistentvolumes/pva", "", 200},
		{"other node's volume", "GET", "/api/v1/persistentvolumes/pvb", "", 403},
		{"deleted volume", "GET", "/api/v1/persistentvolumes/pvc-gone", "", 404},
		{"delete own volume", "DELETE", "/api/v1/persistentvolumes/pva", "", 403},
		{"storage classes", "GET", "/apis/storage.k8s.io/v1/storageclasses", "", 403},
		{"jobs", "GET", "/apis/batch/v1/jobs", "", 403},
		{"all secrets", "GET", "/api/v1/namespaces/default/secrets", "", 403},
		{"mirror pod for b", "POST", "/api/v1/namespaces/default/pods", fmt.Sprintf(mirrorJSON, "mb", "b"), 403},
		{"plain pod", "POST", "/api/v1/namespaces/default/pods", fmt.Sprintf(podOnJSON, "px", "a", "sa"), 403},
		{"delete namespace", "DELETE", "/api/v1/namespaces/default", "", 403},
		{"token admin", "GET", "/api/v1/skiff/tokens", "", 403},

		// Services and EndpointSlices feed the node's proxy and DNS:
		// readable everywhere, never writable.
		{"all services", "GET", "/api/v1/services", "", 200},
		{"a service", "GET", "/api/v1/namespaces/default/services/kubernetes", "", 200},
		{"all endpointslices", "GET", "/apis/discovery.k8s.io/v1/endpointslices", "", 200},
		{"create a service", "POST", "/api/v1/namespaces/default/services", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"evil"},"spec":{"ports":[{"port":80}]}}`, 403},
		{"repoint the kubernetes service", "PATCH", "/api/v1/namespaces/default/services/kubernetes", `{"spec":{"selector":{"app":"evil"}}}`, 403},
		{"delete an endpointslice", "DELETE", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes", "", 403},
		{"write an endpointslice", "POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"evil"},"addressType":"IPv4","endpoints":[],"ports":[]}`, 403},
		{"read endpoints", "GET", "/api/v1/namespaces/default/endpoints", "", 403},
		{"bind itself cluster-admin", "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
			`{"metadata":{"name":"n"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"system:node:a"}]}`, 403},
		{"read roles", "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "", 403},
		{"service accounts", "GET", "/api/v1/namespaces/default/serviceaccounts", "", 403},
		{"a service account token", "POST", "/api/v1/namespaces/default/serviceaccounts/default/token", `{"spec":{}}`, 403},
		{"metrics", "GET", "/metrics", "", 403},
	}
	for _, tt := range tests {
		code, b := h.do(tt.method, tt.path, credA, tt.body)
		if code != tt.want {
			t.Errorf("node a: %s %s (%s) = %d %s; want %d", tt.method, tt.path, tt.name, code, b, tt.want)
			continue
		}
		if code == http.StatusForbidden {
			if st := statusOf(t, b); st.Reason != api.StatusReasonForbidden || st.Message == "" {
				t.Errorf("node a: %s %s: Status %+v; want reason Forbidden with a message", tt.method, tt.path, st)
			}
		}
	}

	// A pod of a's, deleted and made again under its name on b, is b's
	// at once: the server's memory of the pod it wrote last must not let
	// a keep it.
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(podOnJSON, "pr", "a", "sa"), http.StatusCreated)
	h.mustDo("PATCH", "/api/v1/namespaces/default/pods/pr/status", credA, `{"status":{"message":"mine"}}`, http.StatusOK)
	h.mustDo("DELETE", "/api/v1/namespaces/default/pods/pr?gracePeriodSeconds=0", admin, "", http.StatusOK)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", admin, fmt.Sprintf(podOnJSON, "pr", "b", "sb"), http.StatusCreated)
	if code, b := h.do("PATCH", "/api/v1/namespaces/default/pods/pr/status", credA, `{"status":{"phase":"Failed"}}`); code != http.StatusForbidden {
		t.Errorf("node a: status of its pod made again on b = %d %s; want 403", code, b)
	}

	// Another machine claiming "a" with only the join token is refused;
	// "a" itself may re-join with its credential.
	if code, _ := h.join(h.joinToken(), "a", ""); code != http.StatusForbidden {
		t.Errorf("second join as a without its credential = %d; want 403", code)
	}
	if code, cred := h.join(h.joinToken(), "a", credA); code != http.StatusOK || cred != credA {
		t.Errorf("re-join as a with its credential = %d; want 200 and the same credential", code)
	}
	if code, _ := h.join(h.joinToken(), "Not_A_Name", ""); code != http.StatusUnprocessableEntity {
		t.Errorf("join with a bad node name = %d; want 422", code)
	}
}

func TestJoinTokensRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()

	// Create, list and delete through the admin endpoints.
	var created TokenInfo
	b := h.mustDo("POST", "/api/v1/skiff/tokens", admin, `{"ttl":"1h","description":"short"}`, http.StatusCreated)
	if err := json.Unmarshal(b, &created); err != nil || created.Token == "" || created.Expires == nil {
		t.Fatalf("create token answer %s: %v", b, err)
	}
	var list TokenList
	if err := json.Unmarshal(h.mustDo("GET", "/api/v1/skiff/tokens", admin, "", http.StatusOK), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Errorf("token list = %+v; want the default token and the new one", list.Items)
	}
	for _, it := range list.Items {
		if it.Token != "" {
			t.Errorf("token list shows the secret of %s", it.ID)
		}
	}

	// A token for another CA, and an expired token, are refused with 401.
	jt, err := auth.ParseJoinToken(created.Token)
	if err != nil {
		t.Fatal(err)
	}
	wrongCA := jt
	wrongCA.CAHash = strings.Repeat("0", 64)
	if code, _ := h.join(wrongCA.String(), "x", ""); code != http.StatusUnauthorized {
		t.Errorf("join with a wrong CA hash = %d; want 401", code)
	}
	if code, _ := h.join(created.Token, "y", ""); code != http.StatusOK {
		t.Errorf("join with a fresh 1h token = %d; want 200", code)
	}
	h.clk.Advance(2 * time.Hour)
	if code, _ := h.join(created.Token, "z", ""); code != http.StatusUnauthorized {
		t.Errorf("join with a token expired an hour ago = %d; want 401", code)
	}

	h.mustDo("DELETE", "/api/v1/skiff/tokens/"+created.ID, admin, "", http.StatusOK)
	h.mustDo("DELETE", "/api/v1/skiff/tokens/"+created.ID, admin, "", http.StatusNotFound)
	if code, _ := h.join(created.Token, "w", ""); code != http.StatusUnauthorized {
		t.Errorf("join with a deleted token = %d; want 401", code)
	}
	h.mustDo("POST", "/api/v1/skiff/tokens", admin, `{"ttl":"soon"}`, http.StatusBadRequest)
}

func TestJoinRateLimitRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	bad := "SKF1." + strings.Repeat("0", 64) + ".abcdef." + strings.Repeat("a", 32)
	for i := range auth.DefaultLimiterBurst {
		if code, _ := h.join(bad, "n", ""); code != http.StatusUnauthorized {
			t.Fatalf("join attempt %d = %d; want 401", i+1, code)
		}
	}
	code, b := h.do("POST", "/api/v1/join", "", `{"token":"`+bad+`","nodeName":"n"}`)
	if code != http.StatusTooManyRequests || statusOf(t, b).Reason != api.StatusReasonTooManyRequests {
		t.Errorf("join after a burst of %d = %d %s; want 429 TooManyRequests", auth.DefaultLimiterBurst, code, b)
	}
	// The limit refills with time.
	h.clk.Advance(auth.DefaultLimiterEvery)
	if code, _ := h.join(bad, "n", ""); code != http.StatusUnauthorized {
		t.Errorf("join after a refill = %d; want 401", code)
	}
}
