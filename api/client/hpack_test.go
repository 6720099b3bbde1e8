package client

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// lateSettingsConn holds back the server's second write (after the TLS
// handshake's flight: its SETTINGS or what precedes them), so the
// client's first requests leave before it knows the server's limits.
type lateSettingsConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
}

func (c *lateSettingsConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	n := c.writes
	c.mu.Unlock()
	if n == 2 {
		time.Sleep(300 * time.Millisecond)
	}
	return c.Conn.Write(p)
}

type lateSettingsListener struct{ net.Listener }

func (l lateSettingsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lateSettingsConn{Conn: c}, nil
}

// TestHPACKTableBoundedFromFirstRequest: the client's request headers
// never need more than hpackEncoderTableSize of the server's table, even
// for the requests it sends before the server's SETTINGS arrive. A server
// whose decoder table is that small (net/http applies it from the
// connection's start) decodes every request of a burst on a new
// connection; with HTTP/2's default 4 KiB encoder table it ended the
// connection with COMPRESSION_ERROR.
func TestHPACKTableBoundedFromFirstRequest(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	ts.Listener = lateSettingsListener{ts.Listener}
	ts.EnableHTTP2 = true
	ts.Config.HTTP2 = &http.HTTP2Config{MaxDecoderHeaderTableSize: hpackEncoderTableSize}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	c, err := New(Config{Server: ts.URL, CAData: caPEM, Token: strings.Repeat("t", 200)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			path := fmt.Sprintf("/api/v1/namespaces/hpack-%02d/configmaps?labelSelector=%s", i, strings.Repeat(fmt.Sprintf("%02d", i), 40))
			errs[i] = c.DoJSON(ctx, http.MethodGet, path, nil, nil)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
}

// TestNodeCallsSendFewHeaderFields: a heartbeat and a usage report
// reach the HTTP/2 server with user agent, authorization and content
// headers only (no Accept, no Accept-Encoding): the server allocates for
// every field of each of a fleet's thousands of calls a second.
func TestNodeCallsSendFewHeaderFields(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("%s %s over %s; want HTTP/2", r.Method, r.URL.Path, r.Proto)
		}
		io.Copy(io.Discard, r.Body) //nolint:errcheck // drained
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	c, err := New(Config{Server: ts.URL, CAData: caPEM, Token: "node-credential"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx := context.Background()
	for _, body := range []io.Reader{nil, strings.NewReader(`{"time":"2026-12-02T00:00:00Z"}`)} {
		resp, err := c.Do(ctx, http.MethodPost, "/api/v1/skiff/nodes/edge-1/heartbeat", body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"Authorization,Content-Length,User-Agent", "Authorization,Content-Length,Content-Type,User-Agent"}
	for i, h := range got {
		names := slices.Sorted(maps.Keys(h))
		if strings.Join(names, ",") != want[i] {
			t.Errorf("request %d carried %v; want %s", i, names, want[i])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests reached the server; want %d", len(got), len(want))
	}
}
