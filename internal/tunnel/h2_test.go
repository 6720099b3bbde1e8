package tunnel

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// streamServer is an httptest HTTP/2 server taking streamed tunnels
// (POST Path); the token names the node. served counts the handlers
// that have returned.
func streamServer(t *testing.T, g *Registry, served *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer served.Add(1)
		node, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer node-")
		if !ok || r.Method != http.MethodPost || r.URL.Path != Path {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		if err := g.ServeStream(w, r, node); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// openStreamed opens a streamed tunnel as node over hc and serves h on
// it; closing the returned function's result ends it.
func openStreamed(t *testing.T, hc *http.Client, url, node string, h http.Handler) io.Closer {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+Path, pr)
	req.Header.Set("Authorization", "Bearer node-"+node)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("streamed tunnel answered %s over HTTP/%d", resp.Status, resp.ProtoMajor)
	}
	sess, err := AgentSession(&testDuplex{resp.Body, pw, cancel})
	if err != nil {
		t.Fatal(err)
	}
	go (&http.Server{Handler: h}).Serve(sess)
	t.Cleanup(func() { sess.Close() })
	return sess
}

type testDuplex struct {
	body   io.ReadCloser
	pw     *io.PipeWriter
	cancel context.CancelFunc
}

func (d *testDuplex) Read(p []byte) (int, error)  { return d.body.Read(p) }
func (d *testDuplex) Write(p []byte) (int, error) { return d.pw.Write(p) }
func (d *testDuplex) Close() error {
	d.pw.Close()
	d.cancel()
	return d.body.Close()
}

// h2Client is a client of srv that speaks HTTP/2 and opens one
// connection.
func h2Client(srv *httptest.Server) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, MaxConnsPerHost: 1, TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// TestStreamedTunnelCarriesRequestsAndStreams: a tunnel carried by an
// HTTP/2 request serves requests and parallel streams while the same
// connection carries other requests; a second tunnel of the node
// replaces the first; the agent going ends the server's handler, and so
// does closing the registry.
func TestStreamedTunnelCarriesRequestsAndStreams(t *testing.T) {
	g := NewRegistry()
	var served atomic.Int32
	srv := streamServer(t, g, &served)
	hc := h2Client(srv)
	defer hc.CloseIdleConnections()
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !IsStreamUpgrade(r) {
			fmt.Fprintf(w, "first served %s", r.URL.Path)
			return
		}
		c, err := AcceptStream(w)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		io.Copy(c, c)
	})
	first := openStreamed(t, hc, srv.URL, "a", echo)
	waitFor(t, func() bool { return g.Connected("a") })
	rt := g.Transport()
	defer rt.CloseIdleConnections()
	get := func() string {
		resp, err := (&http.Client{Transport: rt}).Get("http://a/containerLogs/x")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get(); got != "first served /containerLogs/x" {
		t.Fatalf("GET through the streamed tunnel = %q", got)
	}
	// A stream's bytes both ways, 4 MiB of them: more than either
	// side's windows.
	s, err := OpenStream(context.Background(), rt, "a", "/exec/x")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte(strings.Repeat("0123456789abcdef", 256<<10))
	go s.Write(want)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(s, got); err != nil || string(got) != string(want) {
		t.Fatalf("echo of 4 MiB: %v (equal %v)", err, string(got) == string(want))
	}
	s.Close()

	// The same connection carries a second tunnel, node a's again: it
	// replaces the first, whose handler returns.
	openStreamed(t, hc, srv.URL, "a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "second") }))
	waitFor(t, func() bool { rt.CloseIdleConnections(); return get() == "second" })
	waitFor(t, func() bool { return served.Load() == 1 })
	if g.Nodes() != 1 {
		t.Fatalf("Nodes() = %d; want 1", g.Nodes())
	}
	first.Close()

	// Node b's tunnel, then b goes: its handler returns and the
	// registry forgets it.
	b := openStreamed(t, hc, srv.URL, "b", echo)
	waitFor(t, func() bool { return g.Connected("b") })
	b.Close()
	waitFor(t, func() bool { return served.Load() == 2 && !g.Connected("b") && g.Nodes() == 1 })
	if _, err := g.Dial(context.Background(), "b"); !errors.Is(err, ErrNoTunnel) {
		t.Fatalf("Dial(b) after b went = %v; want ErrNoTunnel", err)
	}

	// The registry closes (the server stops): a's handler returns.
	g.Close()
	waitFor(t, func() bool { return served.Load() == 3 })
}

// TestStreamedTunnelNeedsHTTP2: over HTTP/1 ServeStream refuses, having
// written nothing.
func TestStreamedTunnelNeedsHTTP2(t *testing.T) {
	g := NewRegistry()
	defer g.Close()
	var served atomic.Int32
	srv := streamServer(t, g, &served)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+Path, strings.NewReader("x"))
	req.Header.Set("Authorization", "Bearer node-a")
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}}}
	resp, err := h1.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Fatalf("answered over HTTP/%d; want 1", resp.ProtoMajor)
	}
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "needs HTTP/2") || g.Nodes() != 0 {
		t.Fatalf("streamed tunnel over HTTP/1 = %d %q, %d tunnels; want 400 naming HTTP/2 and none", resp.StatusCode, b, g.Nodes())
	}
}
