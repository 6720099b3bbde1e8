package client

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// h2Server starts an HTTP/2 TLS test server running h on addr ("" for
// any loopback port) and counts the connections it accepts.
func h2Server(t *testing.T, addr string, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	if addr != "" {
		ts.Listener.Close()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen %s again: %v", addr, err)
		}
		ts.Listener = ln
	}
	conns := new(atomic.Int64)
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts, conns
}

// getAll sends n GETs at once, each bounded by 10 s, and returns the
// first error.
func getAll(c *Client, n int) error {
	errs := make(chan error, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errs <- c.DoJSON(ctx, http.MethodGet, "/ping", nil, nil)
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// TestClientDialsOneHTTP2ConnectionPerServer: requests sent together
// before any connection exists (an agent's loops after a server restart)
// share one connection instead of dialling one each; after the server
// went away with a GOAWAY, or closed the connection under the client,
// the next requests dial exactly one new connection, and none hangs on
// the limit.
func TestClientDialsOneHTTP2ConnectionPerServer(t *testing.T) {
	const n = 8
	// In the first round every request waits until all n are in the
	// server at once, so the test also shows they run concurrently on
	// the one connection. (Later rounds answer at once: a request that
	// fails on a dropped connection never arrives.)
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	var barrier atomic.Bool
	barrier.Store(true)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("request in HTTP/%d; want HTTP/2", r.ProtoMajor)
		}
		if barrier.Load() {
			mu.Lock()
			if arrived++; arrived == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`)) //nolint:errcheck // test server
	})
	ts1, conns1 := h2Server(t, "", h)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts1.Certificate().Raw})
	c, err := New(Config{Server: ts1.URL, CAData: caPEM})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()

	if err := getAll(c, n); err != nil {
		t.Fatalf("first %d requests: %v", n, err)
	}
	if got := conns1.Load(); got != 1 {
		t.Fatalf("%d concurrent first requests opened %d connections; want 1", n, got)
	}
	barrier.Store(false)

	// The server shuts down (GOAWAY) and another starts on its address.
	addr := ts1.Listener.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if err := ts1.Config.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	cancel()
	ts1.Close()
	ts2, conns2 := h2Server(t, addr, h)
	if err := getAll(c, n); err != nil {
		t.Fatalf("%d requests after the restart: %v", n, err)
	}
	if got := conns2.Load(); got != 1 {
		t.Fatalf("after the restart %d concurrent requests opened %d connections; want 1", n, got)
	}

	// The server drops the connection without a word. A request on the
	// dead connection may fail (the caller retries, as the agent's loops
	// do); what must not happen is a slot held by the dead connection.
	ts2.CloseClientConnections()
	var lastErr error
	for i := 0; i < 20; i++ {
		if lastErr = getAll(c, n); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("requests after the server dropped the connection: %v", lastErr)
	}
	if got := conns2.Load(); got != 2 {
		t.Errorf("after the drop the server saw %d connections in all; want 2", got)
	}
}

// TestClientHTTP1ServerIsNotSerialised: a server (or a proxy in front of
// it) that answers in HTTP/1.1 cannot share a connection, so the one
// connection limit must not make a request wait behind an open watch.
func TestClientHTTP1ServerIsNotSerialised(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/watch" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		w.Write([]byte(`{}`)) //nolint:errcheck // test server
	})
	c, _ := newTestClient(t, h) // HTTP/1.1 only: no EnableHTTP2
	defer c.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := c.Do(ctx, http.MethodGet, "/watch", nil)
	if err != nil {
		t.Fatalf("open the watch: %v", err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Fatalf("watch answered in HTTP/%d; the test needs HTTP/1", resp.ProtoMajor)
	}
	if err := getAll(c, 4); err != nil {
		t.Fatalf("requests beside an HTTP/1 watch: %v", err)
	}
}
