package tunnel

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// apiServer is an httptest HTTP/2 server taking tunnels on the API
// connection (POST Path, POST Path/{id}); the token names the node.
// served counts the control handlers that have returned.
func apiServer(t *testing.T, g *Registry, served *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		node, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer node-")
		if ok && r.Method == http.MethodGet && r.URL.Path == "/shared" {
			serveShared(w, r, g, node)
			return
		}
		if !ok || r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		if r.URL.Path == Path {
			defer served.Add(1)
			if err := g.ServeControl(w, r, node); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
			}
			return
		}
		id, _ := strings.CutPrefix(r.URL.Path, Path+"/")
		if err := g.ServeExchange(w, r, node, id); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// h2Client is a client of srv that speaks HTTP/2 and opens one
// connection.
func h2Client(srv *httptest.Server) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, MaxConnsPerHost: 1, TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// post sends a POST as node over hc with body (nil for none) and
// returns the 200 answer.
func post(ctx context.Context, hc *http.Client, url, node string, body io.Reader) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	req.Header.Set("Authorization", "Bearer node-"+node)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%s answered %s over HTTP/%d: %s", url, resp.Status, resp.ProtoMajor, b)
	}
	return resp, nil
}

// testDuplex is an exchange as the agent holds it.
type testDuplex struct {
	body   io.ReadCloser
	pw     *io.PipeWriter
	cancel context.CancelFunc
}

func (d *testDuplex) Read(p []byte) (int, error)  { return d.body.Read(p) }
func (d *testDuplex) Write(p []byte) (int, error) { return d.pw.Write(p) }
func (d *testDuplex) CloseWrite() error           { return d.pw.Close() }
func (d *testDuplex) Close() error {
	d.pw.Close()
	d.cancel()
	return d.body.Close()
}

// agentOnAPI opens node's tunnel on hc's connection and serves h on
// every exchange the server asks for, as the agent does; cancel ends
// it.
func agentOnAPI(t *testing.T, hc *http.Client, url, node string, h http.Handler) (cancel func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := post(ctx, hc, url+Path, node, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln := NewListener()
	go (&http.Server{Handler: h}).Serve(ln)
	go func() {
		defer ln.Close()
		defer resp.Body.Close()
		ReadOpens(resp.Body, func(id string) {
			go func() {
				xctx, xcancel := context.WithCancel(ctx)
				pr, pw := io.Pipe()
				x, err := post(xctx, hc, url+Path+"/"+id, node, pr)
				if err != nil {
					xcancel()
					return
				}
				ln.Deliver(&testDuplex{x.Body, pw, xcancel})
			}()
		})
	}()
	t.Cleanup(cancel)
	return cancel
}

// TestTunnelOnAPIConnectionCarriesRequestsAndStreams: a tunnel on an
// HTTP/2 connection serves requests and parallel streams; a second
// tunnel of the node replaces the first; the agent going ends the
// server's handler, and so does closing the registry.
func TestTunnelOnAPIConnectionCarriesRequestsAndStreams(t *testing.T) {
	g := NewRegistry()
	var served atomic.Int32
	srv := apiServer(t, g, &served)
	hc := h2Client(srv)
	defer hc.CloseIdleConnections()
	echo := echoAgent(t, "first served")
	agentOnAPI(t, hc, srv.URL, "a", echo)
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
		t.Fatalf("GET through the tunnel = %q", got)
	}
	// A stream's bytes both ways, 4 MiB of them (more than HTTP/2's
	// windows), while 10 other streams echo.
	s, err := OpenStream(context.Background(), rt, "a", "/exec/x")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("0123456789abcdef", 256<<10)
	go io.WriteString(s, want)
	errs := make(chan error, 10)
	for i := range 10 {
		go func() {
			s, err := OpenStream(context.Background(), rt, "a", "/exec/x")
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			msg := fmt.Sprintf("stream %d", i)
			io.WriteString(s, msg)
			got := make([]byte, len(msg))
			if _, err := io.ReadFull(s, got); err != nil || string(got) != msg {
				errs <- fmt.Errorf("echo on stream %d = %q, %v", i, got, err)
				return
			}
			errs <- nil
		}()
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(s, got); err != nil || string(got) != want {
		t.Fatalf("echo of 4 MiB: %v (equal %v)", err, string(got) == want)
	}
	s.Close()
	for range 10 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	// The server ends its half (Close, as a yamux stream's) and reads
	// the agent's answer, as a port-forward does.
	cs, err := OpenStream(context.Background(), rt, "a", "/count")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(cs, strings.Repeat("x", 100_000))
	cs.Close()
	if b, err := io.ReadAll(cs); err != nil || string(b) != "counted 100000, <nil>" {
		t.Fatalf("after the server's half ended: %q, %v", b, err)
	}

	// The same connection carries a second tunnel, node a's again: it
	// replaces the first, whose handler returns.
	agentOnAPI(t, hc, srv.URL, "a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "second") }))
	waitFor(t, func() bool { rt.CloseIdleConnections(); return get() == "second" })
	waitFor(t, func() bool { return served.Load() == 1 })
	if g.Nodes() != 1 {
		t.Fatalf("Nodes() = %d; want 1", g.Nodes())
	}

	// Node b's tunnel, then b goes: its handler returns and the
	// registry forgets it.
	goneB := agentOnAPI(t, hc, srv.URL, "b", echo)
	waitFor(t, func() bool { return g.Connected("b") })
	goneB()
	waitFor(t, func() bool { return served.Load() == 2 && !g.Connected("b") && g.Nodes() == 1 })
	if _, err := g.Dial(context.Background(), "b"); !errors.Is(err, ErrNoTunnel) {
		t.Fatalf("Dial(b) after b went = %v; want ErrNoTunnel", err)
	}

	// The registry closes (the server stops): a's handler returns.
	g.Close()
	waitFor(t, func() bool { return served.Load() == 3 })
}

// TestTunnelExchangeOnlyForItsNode: an exchange id is answered only by
// the node whose tunnel asked for it. Node b, answering a's id, gets
// nothing and a's dial still gets a's exchange; an agent that never
// answers makes the dial fail when its context ends.
func TestTunnelExchangeOnlyForItsNode(t *testing.T) {
	g := NewRegistry()
	defer g.Close()
	var served atomic.Int32
	srv := apiServer(t, g, &served)
	hc := h2Client(srv)
	defer hc.CloseIdleConnections()

	// A's control stream, read by the test: it answers by hand.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	control, err := post(ctx, hc, srv.URL+Path, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer control.Body.Close()
	ids := make(chan string, 4)
	go ReadOpens(control.Body, func(id string) { ids <- id })
	waitFor(t, func() bool { return g.Connected("a") })

	dialled := make(chan error, 1)
	go func() {
		c, err := g.Dial(context.Background(), "a")
		if err == nil {
			_, err = io.WriteString(c, "for a")
			c.Close()
		}
		dialled <- err
	}()
	id := <-ids
	if _, err := post(ctx, hc, srv.URL+Path+"/"+id, "b", strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("node b answering a's exchange: %v; want 404", err)
	}
	pr, pw := io.Pipe()
	xctx, xcancel := context.WithCancel(ctx)
	x, err := post(xctx, hc, srv.URL+Path+"/"+id, "a", pr)
	if err != nil {
		t.Fatalf("node a answering its exchange: %v", err)
	}
	ac := newAgentConn(&testDuplex{x.Body, pw, xcancel})
	defer ac.Close()
	got, rerr := io.ReadAll(ac) // to the end of the server's half
	if err := <-dialled; err != nil || rerr != nil || string(got) != "for a" {
		t.Fatalf("a's exchange: %q, %v, dial %v", got, rerr, err)
	}
	// Answered once only.
	if _, err := post(ctx, hc, srv.URL+Path+"/"+id, "a", strings.NewReader("")); err == nil {
		t.Fatal("an exchange answered twice")
	}

	dctx, dcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer dcancel()
	if _, err := g.Dial(dctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial unanswered = %v; want the context's deadline", err)
	}
	late := <-ids
	if _, err := post(ctx, hc, srv.URL+Path+"/"+late, "a", strings.NewReader("")); err == nil {
		t.Fatal("an exchange answered after its dial gave up")
	}
}

// TestTunnelOnAPIConnectionNeedsHTTP2: over HTTP/1 ServeControl refuses,
// having registered nothing.
func TestTunnelOnAPIConnectionNeedsHTTP2(t *testing.T) {
	g := NewRegistry()
	defer g.Close()
	var served atomic.Int32
	srv := apiServer(t, g, &served)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}}}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+Path, nil)
	req.Header.Set("Authorization", "Bearer node-a")
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
		t.Fatalf("tunnel over HTTP/1 = %d %q, %d tunnels; want 400 naming HTTP/2 and none", resp.StatusCode, b, g.Nodes())
	}
}

func TestValidExchangeID(t *testing.T) {
	for id, want := range map[string]bool{
		newExchangeID(): true, strings.Repeat("a", 32): true, strings.Repeat("A", 32): false,
		strings.Repeat("a", 31): false, strings.Repeat("g", 32): false, "": false, "../" + strings.Repeat("a", 29): false,
	} {
		if ValidExchangeID(id) != want {
			t.Errorf("ValidExchangeID(%q) = %v; want %v", id, !want, want)
		}
	}
}

// FuzzReadOpens: a control stream of any bytes is read to an error,
// never a panic, and every id handed on is a valid one.
func FuzzReadOpens(f *testing.F) {
	f.Add([]byte(`{"open":"` + strings.Repeat("0f", 16) + `"}` + "\n"))
	f.Add([]byte(`{"open":"../etc"}` + "\n"))
	f.Add([]byte(strings.Repeat("x", 300) + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := ReadOpens(bytes.NewReader(data), func(id string) {
			if !ValidExchangeID(id) {
				t.Fatalf("handed on %q", id)
			}
		})
		if err == nil {
			t.Fatal("ReadOpens returned nil at the end of its input")
		}
	})
}

// readOnly is an exchange whose answer is r and which takes any write.
type readOnly struct{ io.Reader }

func (readOnly) Write(p []byte) (int, error) { return len(p), nil }
func (readOnly) Close() error                { return nil }

// FuzzAgentConn: the agent reads any answer to its end or an error,
// never a panic; an answer of well-formed frames reads back as the bytes
// they carry.
func FuzzAgentConn(f *testing.F) {
	f.Add([]byte("hello"), []byte{0, 0, 0, 2, 'h', 'i', 0, 0, 0, 0})
	f.Add([]byte{}, []byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, payload, raw []byte) {
		c := newAgentConn(readOnly{bytes.NewReader(raw)})
		got, _ := io.ReadAll(c)
		c.Close()
		if len(got) > len(raw) {
			t.Fatalf("read %d bytes out of %d", len(got), len(raw))
		}
		var framed bytes.Buffer
		for rest := payload; len(rest) > 0; {
			n := min(len(rest), 1+len(rest)/3)
			framed.Write(binary.BigEndian.AppendUint32(nil, uint32(n)))
			framed.Write(rest[:n])
			rest = rest[n:]
		}
		framed.Write([]byte{0, 0, 0, 0})
		c = newAgentConn(readOnly{&framed})
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("framed %q read back as %q, %v", payload, got, err)
		}
	})
}
