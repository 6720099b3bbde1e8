package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/auth"
)

func TestPodReferences(t *testing.T) {
	pod := &api.Pod{Spec: api.PodSpec{
		Volumes: []api.Volume{
			{Name: "s", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "vol-secret"}}},
			{Name: "c", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "d", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		},
		ImagePullSecrets: []api.LocalObjectReference{{Name: "pull"}},
		InitContainers:   []api.Container{{Name: "i", Env: []api.EnvVar{{Name: "A", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "init-env"}}}}}}},
		Containers: []api.Container{{Name: "c", EnvFrom: []api.EnvFromSource{
			{SecretRef: &api.SecretEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "from-secret"}}},
			{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "from-cm"}}},
		}, Env: []api.EnvVar{
			{Name: "B", Value: "literal"},
			{Name: "C", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: &api.ConfigMapKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "env-cm"}}}},
		}}},
	}}
	tests := []struct {
		resource, name string
		want           bool
	}{
		{"secrets", "vol-secret", true},
		{"secrets", "pull", true},
		{"secrets", "init-env", true},
		{"configmaps", "vol-cm", true},
		{"configmaps", "env-cm", true},
		{"secrets", "from-secret", true},
		{"configmaps", "from-cm", true},
		{"configmaps", "from-secret", false},
		{"secrets", "vol-cm", false},
		{"configmaps", "vol-secret", false},
		{"configmaps", "pull", false},
		{"secrets", "literal", false},
		{"secrets", "other", false},
		{"persistentvolumeclaims", "data", true},
		{"persistentvolumeclaims", "vol-cm", false},
		{"secrets", "data", false},
	}
	for _, tt := range tests {
		if got := podReferences(pod, tt.resource, tt.name); got != tt.want {
			t.Errorf("podReferences(pod, %q, %q) = %v; want %v", tt.resource, tt.name, got, tt.want)
		}
	}
}

func TestClientURL(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4zero, Port: 7443}
	tests := []struct{ host, want string }{
		{"0.0.0.0", "https://127.0.0.1:7443"},
		{"", "https://127.0.0.1:7443"},
		{"::", "https://127.0.0.1:7443"},
		{"127.0.0.1", "https://127.0.0.1:7443"},
		{"localhost", "https://127.0.0.1:7443"},
		{"10.1.2.3", "https://10.1.2.3:7443"},
		{"fd00::1", "https://[fd00::1]:7443"},
		{"edge.example", "https://edge.example:7443"},
	}
	for _, tt := range tests {
		if got := clientURL(tt.host, addr); got != tt.want {
			t.Errorf("clientURL(%q) = %q; want %q", tt.host, got, tt.want)
		}
	}
}

func TestRecoverPanicsAnswers500(t *testing.T) {
	s := &server{log: discardLogger()}
	h := s.logRequests(s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"reason":"InternalError"`) {
		t.Errorf("panicking handler answered %d %s; want a 500 InternalError Status", rec.Code, rec.Body)
	}
}

func TestWatchStreamsAndShutdownEndsItRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	req, _ := http.NewRequest("GET", h.info.URL+"/api/v1/namespaces/default/pods?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+h.adminToken())
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h.mustDo("POST", "/api/v1/namespaces/default/pods", h.adminToken(),
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, http.StatusCreated)
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	for strings.TrimSpace(line) == "" && err == nil { // keep-alive newlines
		line, err = br.ReadString('\n')
	}
	if !strings.Contains(line, `"ADDED"`) {
		t.Fatalf("first watch event = %q, %v; want ADDED", line, err)
	}
	start := time.Now()
	if err := h.stop(); err != nil {
		t.Fatalf("Run with an open watch = %v; want nil", err)
	}
	if d := time.Since(start); d > DefaultShutdownTimeout/2 {
		t.Errorf("shutdown with an open watch took %v", d)
	}
}

// TestRequestStateCarriesRouteInfoAndCancellation: the request log's one
// context gives the router its routing context (URL parameters), the
// handlers the requestInfo and the identity authentication stored in
// it, and contexts derived from it end with the request's.
func TestRequestStateCarriesRouteInfoAndCancellation(t *testing.T) {
	s := &server{log: discardLogger()}
	mux := chi.NewRouter()
	mux.Use(func(next http.Handler) http.Handler { // as authenticate does
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ri := requestInfoFrom(r.Context())
			if ri == nil {
				t.Fatal("no requestInfo in the request's context")
			}
			ri.id, ri.authenticated = auth.Identity{Node: "edge-1"}, true
			next.ServeHTTP(w, r)
		})
	})
	ended := make(chan struct{})
	mux.Get("/nodes/{name}", func(w http.ResponseWriter, r *http.Request) {
		if got := chi.URLParam(r, "name"); got != "edge-1" {
			t.Errorf("URL parameter name = %q; want edge-1", got)
		}
		if got := r.PathValue("name"); got != "edge-1" {
			t.Errorf("PathValue(name) = %q; want edge-1", got)
		}
		if id := identityFrom(r.Context()); id.Node != "edge-1" {
			t.Errorf("identity %v; want node edge-1", id)
		}
		if got := chi.RouteContext(r.Context()).Routes; got != mux {
			t.Errorf("routing context's Routes = %v; want the mux", got)
		}
		derived, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() { <-derived.Done(); close(ended) }()
		w.WriteHeader(http.StatusNoContent)
	})
	ctx, cancel := context.WithCancel(context.Background())
	rec := httptest.NewRecorder()
	s.logRequests(mux).ServeHTTP(rec, httptest.NewRequest("GET", "/nodes/edge-1", nil).WithContext(ctx))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("answered %d; want 204", rec.Code)
	}
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("a context derived from the request's did not end with it")
	}
	if id := identityFrom(context.Background()); id.Admin || id.Node != "" {
		t.Errorf("identity outside a request = %v; want anonymous", id)
	}
}
