package tunnel

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer is an httptest TLS server taking tunnels: the token names
// the node (a stand-in for the server's authentication).
func testServer(t *testing.T, g *Registry) (*httptest.Server, []byte) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		node, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer node-")
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"message":"who are you"}`)
			return
		}
		if r.URL.Path != Path || !IsUpgrade(r) {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if err := g.Accept(w, node); err != nil {
			t.Errorf("Accept: %v", err)
		}
	}))
	srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, ca
}

// agentServe dials a tunnel as node and serves h on it until the test
// ends.
func agentServe(t *testing.T, url string, ca []byte, node string, h http.Handler) {
	t.Helper()
	sess, err := Dial(context.Background(), DialConfig{Server: url, CAData: ca, Token: "node-" + node})
	if err != nil {
		t.Fatal(err)
	}
	go (&http.Server{Handler: h}).Serve(sess)
	t.Cleanup(func() { sess.Close() })
}

func TestTunnelCarriesRequestsAndStreams(t *testing.T) {
	g := NewRegistry()
	defer g.Close()
	srv, ca := testServer(t, g)
	agentServe(t, srv.URL, ca, "a", echoAgent(t, "a served"))
	waitFor(t, func() bool { return g.Connected("a") })
	rt := g.Transport()
	defer rt.CloseIdleConnections()
	resp, err := (&http.Client{Transport: rt}).Get("http://a/containerLogs/x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "a served /containerLogs/x" {
		t.Fatalf("GET through the tunnel = %q", b)
	}
	if _, err := g.Dial(context.Background(), "b"); !errors.Is(err, ErrNoTunnel) {
		t.Fatalf("Dial(b) = %v; want ErrNoTunnel", err)
	}

	// Many streams at once; one whose echo nobody reads fills its own
	// window and does not stall the others.
	stalled, err := OpenStream(context.Background(), rt, "a", "/exec/x")
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	go stalled.Write(make([]byte, 8<<20))
	time.Sleep(100 * time.Millisecond)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := OpenStream(context.Background(), rt, "a", "/exec/x")
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			msg := fmt.Sprintf("stream %d", i)
			io.WriteString(s, msg)
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(s, got); err != nil || string(got) != msg {
				t.Errorf("echo on stream %d = %q, %v", i, got, err)
			}
		}()
	}
	wg.Wait()
}

func TestTunnelReplacedByTheSameNode(t *testing.T) {
	g := NewRegistry()
	defer g.Close()
	srv, ca := testServer(t, g)
	agentServe(t, srv.URL, ca, "a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "first") }))
	waitFor(t, func() bool { return g.Connected("a") })
	agentServe(t, srv.URL, ca, "a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "second") }))
	rt := g.Transport()
	defer rt.CloseIdleConnections()
	waitFor(t, func() bool {
		resp, err := (&http.Client{Transport: rt}).Get("http://a/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b) == "second"
	})
	if g.Nodes() != 1 {
		t.Fatalf("Nodes() = %d after a reconnect; want 1", g.Nodes())
	}
}

func TestDialRefused(t *testing.T) {
	g := NewRegistry()
	defer g.Close()
	srv, ca := testServer(t, g)
	_, err := Dial(context.Background(), DialConfig{Server: srv.URL, CAData: ca, Token: "wrong"})
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Code != http.StatusUnauthorized || refused.Message != "who are you" {
		t.Fatalf("Dial with a bad token = %v; want RefusedError 401 \"who are you\"", err)
	}
}

// echoAgent answers a plain request with "<served> <path>", and on an
// upgraded stream echoes what it reads; on /count it reads to the end of
// the server's half, then answers with how much it read.
func echoAgent(t *testing.T, served string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsStreamUpgrade(r) {
			fmt.Fprintf(w, "%s %s", served, r.URL.Path)
			return
		}
		c, err := AcceptStream(w)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		if r.URL.Path == "/count" {
			n, err := io.Copy(io.Discard, c)
			fmt.Fprintf(c, "counted %d, %v", n, err)
			return
		}
		io.Copy(c, c)
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAgentGoneLeavesNoTunnel: when an agent's session ends, the
// registry stops counting and dialling it, with no goroutine of its own
// per tunnel; the server's end runs no keep-alive loop (the agent's
// pings keep the link).
func TestAgentGoneLeavesNoTunnel(t *testing.T) {
	g := NewRegistry()
	defer g.Close()
	srv, ca := testServer(t, g)
	sess, err := Dial(context.Background(), DialConfig{Server: srv.URL, CAData: ca, Token: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return g.Nodes() == 1 && g.Connected("a") })
	sess.Close()
	waitFor(t, func() bool { return g.Nodes() == 0 && !g.Connected("a") })
	if _, err := g.Dial(context.Background(), "a"); !errors.Is(err, ErrNoTunnel) {
		t.Fatalf("dial after the agent went: %v; want ErrNoTunnel", err)
	}
	if serverMuxConfig().EnableKeepAlive || !muxConfig().EnableKeepAlive {
		t.Fatal("want the agent's end alone to send keep-alives")
	}
}
