package server

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
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
