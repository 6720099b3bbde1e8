package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// harness is a real server (Run) on a real SQLite file in a temporary
// data dir, serving real TLS on 127.0.0.1:0, reached by a client that
// trusts only the server's CA.
type harness struct {
	t       testing.TB
	dir     string
	clk     *clock.Fake
	info    Info
	cancel  context.CancelFunc
	done    chan error
	stopped bool
	client  *http.Client
}

// startHarness runs a server on dataDir ("" for a new temporary one) and
// stops it at the end of the test.
func startHarness(t testing.TB, dataDir string, clk *clock.Fake) *harness {
	t.Helper()
	return startHarnessWith(t, dataDir, clk, nil)
}

// startHarnessWith is startHarness with configure applied to the
// Config (which has the agent and the controllers off).
func startHarnessWith(t testing.TB, dataDir string, clk *clock.Fake, configure func(*Config)) *harness {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	if clk == nil {
		clk = clock.NewFake(time.Now())
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan Info, 1)
	h := &harness{t: t, dir: dataDir, clk: clk, cancel: cancel, done: make(chan error, 1)}
	cfg := Config{DataDir: dataDir, Listen: "127.0.0.1:0", Clock: clk, DisableAgent: true, DisableControllers: true, Ready: func(i Info) { ready <- i }}
	if configure != nil {
		configure(&cfg)
	}
	go func() { h.done <- Run(ctx, cfg) }()
	select {
	case h.info = <-ready:
	case err := <-h.done:
		cancel()
		t.Fatalf("Run failed at start: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("server did not become ready in 30s")
	}
	caPEM, err := os.ReadFile(h.info.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	h.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("Run returned %v at shutdown", err)
		}
	})
	return h
}

// stop cancels Run's context and returns what Run returned; later calls
// return nil.
func (h *harness) stop() error {
	if h.stopped {
		return nil
	}
	h.stopped = true
	h.cancel()
	h.client.CloseIdleConnections()
	select {
	case err := <-h.done:
		return err
	case <-time.After(30 * time.Second):
		return errors.New("Run did not return within 30s of cancel")
	}
}

// readFile returns the content of a file under <data-dir>/server/.
func (h *harness) readFile(name string) string {
	h.t.Helper()
	b, err := os.ReadFile(h.dir + "/server/" + name)
	if err != nil {
		h.t.Fatal(err)
	}
	return string(b)
}

func (h *harness) adminToken() string { return strings.TrimSpace(h.readFile(adminTokenName)) }
func (h *harness) joinToken() string  { return strings.TrimSpace(h.readFile(joinTokenName)) }

// do sends a request with an optional bearer token and JSON body and
// returns the code and body.
func (h *harness) do(method, path, token, body string) (int, []byte) {
	h.t.Helper()
	return h.doType(method, path, token, "", body)
}

// doType is do with the body's content type ("" for do's choice).
func (h *harness) doType(method, path, token, contentType, body string) (int, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.info.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		if method == http.MethodPatch {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// mustDo is do that fails the test unless the code is want.
func (h *harness) mustDo(method, path, token, body string, want int) []byte {
	h.t.Helper()
	code, b := h.do(method, path, token, body)
	if code != want {
		h.t.Fatalf("%s %s = %d %s; want %d", method, path, code, bytes.TrimSpace(b), want)
	}
	return b
}

// mustDoType is doType that fails the test unless the code is want.
func (h *harness) mustDoType(method, path, token, contentType, body string, want int) []byte {
	h.t.Helper()
	code, b := h.doType(method, path, token, contentType, body)
	if code != want {
		h.t.Fatalf("%s %s = %d %s; want %d", method, path, code, bytes.TrimSpace(b), want)
	}
	return b
}

// join exchanges a join token and returns the code and, on success, the
// node credential.
func (h *harness) join(token, node, cred string) (int, string) {
	h.t.Helper()
	body, _ := json.Marshal(JoinRequest{Token: token, NodeName: node, NodeCredential: cred})
	code, b := h.do(http.MethodPost, "/api/v1/join", "", string(body))
	var jr JoinResponse
	if code == http.StatusOK {
		if err := json.Unmarshal(b, &jr); err != nil {
			h.t.Fatalf("join answer %s: %v", b, err)
		}
	}
	return code, jr.NodeCredential
}

// statusOf decodes a Status body, failing the test if it is not one.
func statusOf(t *testing.T, b []byte) api.Status {
	t.Helper()
	var st api.Status
	if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("body is not a Status: %s", b)
	}
	return st
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
