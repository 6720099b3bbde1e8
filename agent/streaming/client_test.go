package streaming

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api/client"
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

// TestClientTunnelOnTheAPIConnection: the tunnel goes on the API
// connection when the server has it; a refusal there is retried there,
// after the back-off, and not dialled; only ErrUnsupported (HTTP/1, an
// older server) makes the client dial a connection of its own, and the
// next tunnel goes on the API connection again.
func TestClientTunnelOnTheAPIConnection(t *testing.T) {
	g := tunnel.NewRegistry()
	defer g.Close()
	var controls, dialled atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && tunnel.IsUpgrade(r):
			dialled.Add(1)
			if err := g.Accept(w, "a"); err != nil {
				t.Errorf("Accept: %v", err)
			}
		case r.Method == http.MethodPost && r.URL.Path == tunnel.Path:
			switch controls.Add(1) {
			case 1:
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `{"kind":"Status","code":403,"message":"not now"}`)
			case 2:
				http.Error(w, "no such method", http.StatusMethodNotAllowed)
			default:
				if err := g.ServeControl(w, r, "a"); err != nil {
					t.Errorf("ServeControl: %v", err)
				}
			}
		case r.Method == http.MethodPost:
			id, _ := strings.CutPrefix(r.URL.Path, tunnel.Path+"/")
			if err := g.ServeExchange(w, r, "a", id); err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
			}
		default:
			http.NotFound(w, r)
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	api, err := client.New(client.Config{Server: srv.URL, CAData: ca, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer api.CloseIdleConnections()

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
	if controls.Load() != 1 || dialled.Load() != 0 {
		t.Fatalf("after a refusal: %d control streams, %d dials; want 1, 0", controls.Load(), dialled.Load())
	}
	clk.Advance(time.Second)
	// Then 405, an older server: dialled at once.
	waitUntil(t, func() bool { return g.Connected("a") && c.Connected() })
	if c.OnAPIConnection() || dialled.Load() != 1 {
		t.Fatalf("OnAPIConnection() = %v, %d dials; want a dialled tunnel", c.OnAPIConnection(), dialled.Load())
	}
	rt := g.Transport()
	defer rt.CloseIdleConnections()
	get := func() string {
		resp, err := (&http.Client{Transport: rt}).Get("http://a/x")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get(); got != "served" {
		t.Fatalf("through the dialled tunnel: %q", got)
	}

	// The dialled tunnel drops: the next goes on the API connection.
	g.Disconnect("a")
	rt.CloseIdleConnections()
	clk.BlockUntil(1)
	clk.Advance(2 * time.Second)
	waitUntil(t, func() bool { return c.OnAPIConnection() && g.Connected("a") })
	if got := get(); got != "served" || dialled.Load() != 1 {
		t.Fatalf("through the tunnel on the API connection: %q, %d dials; want served, 1", got, dialled.Load())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
