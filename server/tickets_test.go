package server

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// A client that talked to the server before a restart resumes its TLS
// session with the restarted one (no certificate, no signature), and a
// resumed session is no credential: a request without a token is still
// refused.
func TestRestartedServerResumesTLSSessionsRealTLS(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Now())
	h := startHarness(t, dir, clk)
	caPEM, err := os.ReadFile(h.info.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	// get sends one request on a new connection and returns the status
	// line and whether the session was resumed.
	get := func(h *harness, path, token string) (string, bool) {
		t.Helper()
		c, err := tls.Dial("tcp", h.info.Addr.String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
		if token != "" {
			req += "Authorization: Bearer " + token + "\r\n"
		}
		if _, err := io.WriteString(c, req+"\r\n"); err != nil {
			t.Fatal(err)
		}
		// Reading the answer also reads the session ticket, which TLS
		// 1.3 sends after the handshake.
		b, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		line, _, _ := strings.Cut(string(b), "\r\n")
		return line, c.ConnectionState().DidResume
	}
	if _, resumed := get(h, "/healthz", ""); resumed {
		t.Fatal("the first connection resumed a session")
	}
	if _, resumed := get(h, "/healthz", ""); !resumed {
		t.Fatal("the second connection to the same server did not resume")
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h = startHarness(t, dir, clk)
	token := h.adminToken()
	line, resumed := get(h, "/api/v1/namespaces/default/configmaps", token)
	if !resumed {
		t.Fatal("the first connection to the restarted server did not resume its session")
	}
	if !strings.Contains(line, " 200 ") {
		t.Errorf("admin list over a resumed session: %q; want 200", line)
	}
	if _, m := h.do("GET", "/metrics", token, ""); !strings.Contains(string(m), "\nskiff_tls_handshakes_resumed_total 1\n") {
		t.Errorf("the restarted server's metrics do not count one resumed handshake:\n%s", grepLines(string(m), "skiff_tls_"))
	}
	if line, resumed := get(h, "/api/v1/namespaces/default/configmaps", ""); !resumed || !strings.Contains(line, " 401 ") {
		t.Errorf("no token over a resumed session: %q (resumed %v); want 401", line, resumed)
	}
	// Two days on (the fake clock advances; the hourly rotation runs), the
	// restart's tickets no longer open: a full handshake, which works.
	clk.Advance(49 * time.Hour)
	waitUntil(t, "tickets of two days ago refused", func() bool {
		_, resumed := get(h, "/healthz", "")
		return !resumed
	})
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			b.WriteString(line)
		}
	}
	return b.String()
}
