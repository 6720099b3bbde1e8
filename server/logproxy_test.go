package server

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/logs"
	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/api"
)

// fakeAgent serves the agent's real log handler on 127.0.0.1 with a
// self-signed certificate and the cluster CA for client certificates.
type fakeAgent struct {
	port int
	fp   string
	dir  string
}

func startLogAgent(t *testing.T, caPath string) *fakeAgent {
	t.Helper()
	dir := t.TempDir()
	cert, fp, err := logs.EnsureServingCert(dir, "edge", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	tcfg, err := logs.TLSConfig(cert, ca)
	if err != nil {
		t.Fatal(err)
	}
	h := &logs.Handler{Path: func(ns, pod, c string, previous bool) (string, error) {
		if previous {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found: %w", c, pod, logs.ErrNoLog)
		}
		return filepath.Join(dir, ns+"_"+pod+"_"+c+".log"), nil
	}}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tcfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return &fakeAgent{port: ln.Addr().(*net.TCPAddr).Port, fp: fp, dir: dir}
}

func TestLogsProxiedToTheAgent(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	agent := startLogAgent(t, h.info.CAPath)
	if err := os.WriteFile(filepath.Join(agent.dir, "default_web_app.log"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	node := api.Node{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: api.ObjectMeta{Name: "edge", Annotations: map[string]string{agentCertAnnotation: agent.fp}}}
	b, _ := json.Marshal(node)
	h.mustDo(http.MethodPost, "/api/v1/nodes", admin, string(b), http.StatusCreated)
	status := fmt.Sprintf(`{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, agent.port)
	h.mustDo(http.MethodPatch, "/api/v1/nodes/edge/status", admin, status, http.StatusOK)
	h.mustDo(http.MethodPost, "/api/v1/namespaces/default/pods", admin,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"nodeName":"edge","containers":[{"name":"app","image":"busybox"}]}}`, http.StatusCreated)
	h.mustDo(http.MethodPost, "/api/v1/namespaces/default/pods", admin,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"two"},"spec":{"nodeName":"edge","containers":[{"name":"a","image":"busybox"},{"name":"b","image":"busybox"}]}}`, http.StatusCreated)

	if got := string(h.mustDo(http.MethodGet, "/api/v1/namespaces/default/pods/web/log", admin, "", http.StatusOK)); got != "one\ntwo\nthree\n" {
		t.Fatalf("log = %q", got)
	}
	if got := string(h.mustDo(http.MethodGet, "/api/v1/namespaces/default/pods/web/log?tailLines=2", admin, "", http.StatusOK)); got != "two\nthree\n" {
		t.Fatalf("tailLines=2: %q", got)
	}
	if got := string(h.mustDo(http.MethodGet, "/api/v1/namespaces/default/pods/web/log?limitBytes=5", admin, "", http.StatusOK)); got != "one\nt" {
		t.Fatalf("limitBytes=5: %q", got)
	}
	st := statusOf(t, h.mustDo(http.MethodGet, "/api/v1/namespaces/default/pods/web/log?previous=true", admin, "", http.StatusNotFound))
	if !strings.Contains(st.Message, "previous terminated container") {
		t.Fatalf("previous: %+v", st)
	}
	st = statusOf(t, h.mustDo(http.MethodGet, "/api/v1/namespaces/default/pods/two/log", admin, "", http.StatusBadRequest))
	if !strings.Contains(st.Message, "choose one of: [a b]") {
		t.Fatalf("two containers: %+v", st)
	}
	h.mustDo(http.MethodGet, "/api/v1/namespaces/default/pods/web/log?container=nope", admin, "", http.StatusBadRequest)
	h.mustDo(http.MethodGet, "/api/v1/namespaces/default/pods/web/log?tailLines=x", admin, "", http.StatusBadRequest)

	// A node whose pinned hash does not match is not trusted.
	h.mustDo(http.MethodPatch, "/api/v1/nodes/edge", admin, `{"metadata":{"annotations":{"`+agentCertAnnotation+`":"`+strings.Repeat("0", 64)+`"}}}`, http.StatusOK)
	st = statusOf(t, h.mustDo(http.MethodGet, "/api/v1/namespaces/default/pods/web/log", admin, "", http.StatusServiceUnavailable))
	if !strings.Contains(st.Message, "pinned hash") {
		t.Fatalf("wrong pin: %+v", st)
	}
}

// TestAgentLogsRefuseOtherClients: a client without the server's
// certificate gets nothing from the agent, even one with a cluster CA
// pool.
func TestAgentLogsRefuseOtherClients(t *testing.T) {
	h := startHarness(t, "", nil)
	agent := startLogAgent(t, h.info.CAPath)
	os.WriteFile(filepath.Join(agent.dir, "default_web_app.log"), []byte("secret\n"), 0o644)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: pinnedTLS(agent.fp, nil)}}
	resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d/containerLogs/default/web/app", agent.port))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("no client certificate: got %s %q", resp.Status, b)
	}
	// A certificate from another CA is refused too.
	other := t.TempDir()
	cert, _, err := logs.EnsureServingCert(other, "impostor", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: pinnedTLS(agent.fp, &cert)}}
	if resp, err := c.Get(fmt.Sprintf("https://127.0.0.1:%d/containerLogs/default/web/app", agent.port)); err == nil {
		resp.Body.Close()
		t.Fatalf("foreign client certificate: got %s", resp.Status)
	}
}

func TestAgentConstantsAgree(t *testing.T) {
	if agentCommonName != logs.ServerCommonName {
		t.Errorf("server presents %q, agents want %q", agentCommonName, logs.ServerCommonName)
	}
	if agentCertAnnotation != node.AnnotationAgentCert {
		t.Errorf("server reads %q, agents write %q", agentCertAnnotation, node.AnnotationAgentCert)
	}
}
