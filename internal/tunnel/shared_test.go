package tunnel

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// serveShared streams node's open lines from an AttachControl reader,
// as the API server's shared stream does (GET /shared in apiServer).
func serveShared(w http.ResponseWriter, r *http.Request, g *Registry, node string) {
	rd, err := g.AttachControl(node)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer rd.Close()
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	for {
		lines, _, wake := rd.Next()
		for _, l := range lines {
			w.Write(append(l, '\n'))
		}
		if rc.Flush() != nil {
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		}
	}
}

// agentShared reads node's opens from GET /shared and answers each with
// an exchange serving h, as the agent does with its shared stream. The
// exchanges live on xctx, not on the control's: cancel ends only the
// control's stream.
func agentShared(t *testing.T, hc *http.Client, url, node string, xctx context.Context, h http.Handler) (cancel func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/shared", nil)
	req.Header.Set("Authorization", "Bearer node-"+node)
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET /shared = %v, %v", resp, err)
	}
	ln := NewListener()
	go (&http.Server{Handler: h}).Serve(ln)
	go func() {
		defer resp.Body.Close()
		ReadOpens(resp.Body, func(id string) {
			go func() {
				ectx, ecancel := context.WithCancel(xctx)
				pr, pw := io.Pipe()
				x, err := post(ectx, hc, url+Path+"/"+id, node, pr)
				if err != nil {
					ecancel()
					return
				}
				ln.Deliver(&testDuplex{x.Body, pw, ecancel})
			}()
		})
	}()
	t.Cleanup(func() { cancel(); ln.Close() })
	return cancel
}

// TestTunnelControlOutlivesItsSharedStream: the shared stream that reads
// a node's opens is opened again whenever one of the agent's watches
// starts. An exchange in flight goes on across that, a dial made while
// no stream reads waits for the next one, and only a control nobody
// has read for DetachGrace is closed.
func TestTunnelControlOutlivesItsSharedStream(t *testing.T) {
	g := NewRegistry()
	defer g.Close()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC).UnixNano())
	g.now = func() time.Time { return time.Unix(0, now.Load()) }
	var served atomic.Int32
	srv := apiServer(t, g, &served)
	hc := h2Client(srv)
	defer hc.CloseIdleConnections()
	xctx, xcancel := context.WithCancel(context.Background())
	defer xcancel()
	echo := echoAgent(t, "served")

	first := agentShared(t, hc, srv.URL, "a", xctx, echo)
	waitFor(t, func() bool { return g.Connected("a") })
	rt := g.Transport()
	defer rt.CloseIdleConnections()
	xs, err := OpenStream(context.Background(), rt, "a", "/exec/x")
	if err != nil {
		t.Fatal(err)
	}
	defer xs.Close()
	echoOnce := func(msg string) {
		t.Helper()
		io.WriteString(xs, msg)
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(xs, got); err != nil || string(got) != msg {
			t.Fatalf("echo %q = %q, %v", msg, got, err)
		}
	}
	echoOnce("before")

	// The stream goes; a dial waits; the next stream serves it.
	first()
	waitFor(t, func() bool { return readers(g, "a") == 0 })
	if !g.Connected("a") {
		t.Fatal("Connected(a) = false right after its stream went; want true within DetachGrace")
	}
	dialed := make(chan error, 1)
	go func() {
		c, err := g.Dial(context.Background(), "a")
		if err == nil {
			c.Close()
		}
		dialed <- err
	}()
	second := agentShared(t, hc, srv.URL, "a", xctx, echo)
	if err := <-dialed; err != nil {
		t.Fatalf("a dial made between two streams = %v; want the next stream's exchange", err)
	}
	echoOnce("after") // the exchange of the first stream goes on

	// The agent goes for good: past DetachGrace, no tunnel.
	second()
	waitFor(t, func() bool { return readers(g, "a") == 0 })
	now.Add(int64(DetachGrace + time.Second))
	if g.Connected("a") || g.Nodes() != 0 {
		t.Fatalf("Connected(a) = %v, Nodes() = %d past DetachGrace; want no tunnel", g.Connected("a"), g.Nodes())
	}
	if _, err := g.Dial(context.Background(), "a"); !errors.Is(err, ErrNoTunnel) {
		t.Fatalf("Dial(a) past DetachGrace = %v; want ErrNoTunnel", err)
	}
}

// readers is how many streams read node's control.
func readers(g *Registry, node string) int {
	g.mu.Lock()
	c, _ := g.sessions[node].(*control)
	g.mu.Unlock()
	if c == nil {
		return -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readers
}
