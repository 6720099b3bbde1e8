package streaming

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

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
