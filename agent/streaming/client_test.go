package streaming

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	skiffapi "github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// TestClientReconnectsWithCappedBackoff: the server refuses the tunnel
// twice, then takes it; when the server drops it, the agent dials again
// after a wait. Waits are on a fake clock and never exceed the cap.
func TestClientReconnectsWithCappedBackoff(t *testing.T) {
	g := tunnel.NewRegistry()
	defer g.Close()
	var attempts atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if attempts.Add(1) <= 2 {
			http.Error(w, "starting up", http.StatusServiceUnavailable)
			return
		}
		if err := g.Accept(w, "a"); err != nil {
			t.Errorf("Accept: %v", err)
		}
	}))
	srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	c := &Client{
		Dial:    tunnel.DialConfig{Server: srv.URL, CAData: ca, Token: "t"},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") }),
		Clock:   clk,
		Backoff: backoff.Backoff{Min: time.Second, Max: 4 * time.Second, NoJitter: true},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	for _, wait := range []time.Duration{time.Second, 2 * time.Second} {
		clk.BlockUntil(1)
		clk.Advance(wait)
	}
	waitUntil(t, func() bool { return g.Connected("a") && c.Connected() })
	if n := attempts.Load(); n != 3 {
		t.Fatalf("attempts = %d; want 3 (two refused, one taken)", n)
	}
	rt := g.Transport()
	defer rt.CloseIdleConnections()
	resp, err := (&http.Client{Transport: rt}).Get("http://a/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	g.Disconnect("a")
	rt.CloseIdleConnections()
	// The tunnel lived less than a minute: the wait goes on growing,
	// capped at 4 s.
	clk.BlockUntil(1)
	clk.Advance(4 * time.Second)
	waitUntil(t, func() bool { return g.Connected("a") })
	if n := attempts.Load(); n != 4 {
		t.Fatalf("attempts = %d; want 4", n)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v; want nil when ctx ends", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if c.Connected() {
		t.Error("Connected() after Run returned")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeDuplexer answers OpenDuplex with its errors in turn, then with
// net.Pipe ends whose other side it hands to the test.
type fakeDuplexer struct {
	errs   []error
	calls  atomic.Int32
	server chan net.Conn
}

func (f *fakeDuplexer) OpenDuplex(ctx context.Context, path string) (io.ReadWriteCloser, error) {
	n := int(f.calls.Add(1))
	if path != tunnel.Path {
		return nil, errors.New("wrong path " + path)
	}
	if n <= len(f.errs) {
		return nil, f.errs[n-1]
	}
	a, b := net.Pipe()
	f.server <- b
	return a, nil
}

// TestClientStreamsTunnelOnTheAPIConnection: the tunnel goes on the API
// connection when the server has it; a refusal there is retried there,
// after the back-off, and not dialled; only ErrUnsupported (HTTP/1, an
// older server) makes the client dial a connection of its own.
func TestClientStreamsTunnelOnTheAPIConnection(t *testing.T) {
	g := tunnel.NewRegistry()
	defer g.Close()
	var dialled atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dialled.Add(1)
		if err := g.Accept(w, "a"); err != nil {
			t.Errorf("Accept: %v", err)
		}
	}))
	srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	api := &fakeDuplexer{
		errs:   []error{fmt.Errorf("POST: %w", skiffapi.NewStatusError(http.StatusForbidden, skiffapi.StatusReasonForbidden, "no")), fmt.Errorf("POST: 405: %w", errors.ErrUnsupported)},
		server: make(chan net.Conn, 1),
	}
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	c := &Client{
		API:     api,
		Dial:    tunnel.DialConfig{Server: srv.URL, CAData: ca, Token: "t"},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") }),
		Clock:   clk,
		Backoff: backoff.Backoff{Min: time.Second, Max: 4 * time.Second, NoJitter: true},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	// Refused on the API connection: back off, no dial.
	clk.BlockUntil(1)
	if api.calls.Load() != 1 || dialled.Load() != 0 {
		t.Fatalf("after a refusal: %d opens, %d dials; want 1, 0", api.calls.Load(), dialled.Load())
	}
	clk.Advance(time.Second)
	// The second open is unsupported: dialled at once.
	waitUntil(t, func() bool { return g.Connected("a") && c.Connected() })
	if c.Streamed() || dialled.Load() != 1 {
		t.Fatalf("Streamed() = %v, %d dials; want a dialled tunnel", c.Streamed(), dialled.Load())
	}

	// The dialled tunnel drops: the next is streamed.
	g.Disconnect("a")
	clk.BlockUntil(1)
	clk.Advance(2 * time.Second)
	conn := <-api.server
	defer conn.Close()
	sess, err := yamux.Client(conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	waitUntil(t, c.Streamed)
	s, err := sess.Open()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://a/x", nil)
	req.Write(s)
	resp, err := http.ReadResponse(bufio.NewReader(s), req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "served" || dialled.Load() != 1 {
		t.Fatalf("through the streamed tunnel: %q, %d dials; want served, 1", b, dialled.Load())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
