package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/server/tlsutil"
)

// handshakeFixture is a CA, a serving certificate for 127.0.0.1 and the
// matching client and server TLS configurations.
type handshakeFixture struct {
	server *tls.Config
	client *tls.Config
}

func newHandshakeFixture(t testing.TB) handshakeFixture {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsutil.EnsureCA(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	sans, err := tlsutil.ParseSANs([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tlsutil.EnsureServerCert(dir, ca, sans, nil)
	if err != nil {
		t.Fatal(err)
	}
	return handshakeFixture{
		server: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}, NextProtos: []string{"h2", "http/1.1"}},
		client: &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"},
	}
}

// serveHandshaken serves h over a handshakeListener on loopback, as the
// server does, and returns the listener's address.
func serveHandshaken(t testing.TB, fx handshakeFixture, timeout time.Duration, h http.Handler) (*handshakeListener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl := newHandshakeListener(ln, fx.server.Clone(), timeout, slog.New(slog.DiscardHandler))
	hs := &http.Server{Handler: h, TLSConfig: fx.server.Clone()}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(hl) }()
	t.Cleanup(func() {
		hs.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve = %v; want ErrServerClosed", err)
		}
	})
	return hl, hl.Addr().String()
}

func h2Client(fx handshakeFixture) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: fx.client.Clone(), ForceAttemptHTTP2: true}}
}

func TestHandshakeListenerServesHTTP2(t *testing.T) {
	fx := newHandshakeFixture(t)
	_, addr := serveHandshaken(t, fx, 5*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %v", r.Proto, r.TLS != nil && r.TLS.HandshakeComplete)
	}))
	resp, err := h2Client(fx).Get("https://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "HTTP/2.0 true"; got != want {
		t.Errorf("body = %q; want %q (HTTP/2 negotiated on a handshaken connection)", got, want)
	}
}

// A peer that connects and never says hello must neither hold up other
// clients nor keep its socket past the handshake timeout.
func TestHandshakeListenerSilentPeer(t *testing.T) {
	fx := newHandshakeFixture(t)
	_, addr := serveHandshaken(t, fx, 300*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var silent []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	resp, err := h2Client(fx).Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("a client behind 20 silent peers: %v", err)
	}
	resp.Body.Close()
	for i, c := range silent {
		// Closed by the server within its 300 ms: the read ends long
		// before this 30 s bound.
		if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("silent peer %d still connected after 30 s; want closed after the handshake timeout", i)
		}
		if n != 0 || err == nil {
			t.Fatalf("silent peer %d read %d bytes, %v; want the connection closed", i, n, err)
		}
	}
}

func TestHandshakeListenerBadHandshakeIsClosed(t *testing.T) {
	fx := newHandshakeFixture(t)
	_, addr := serveHandshaken(t, fx, 5*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	// The TLS stack answers plain HTTP with at most an alert record; it
	// must never be served.
	if len(b) > 7 {
		t.Errorf("plain HTTP on the TLS port got %d bytes (%q); want at most a TLS alert and a close", len(b), b)
	}
}

func TestHandshakeListenerCloseEndsAccept(t *testing.T) {
	fx := newHandshakeFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl := newHandshakeListener(ln, fx.server.Clone(), time.Second, slog.New(slog.DiscardHandler))
	accepted := make(chan error, 1)
	go func() {
		_, err := hl.Accept()
		accepted <- err
	}()
	if err := hl.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-accepted:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close = %v; want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Accept still blocked 10 s after Close")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the inner listener still accepts after Close")
	}
}

// BenchmarkConnStack measures the goroutine stacks a held HTTP/2
// connection costs (server and this process's client together; the
// client side is the same in both cases): net/http handshaking in the
// connection's serving goroutine against handshakeListener.
//
//	go test ./server -run '^$' -bench ConnStack -benchtime 1x
func BenchmarkConnStack(b *testing.B) {
	for _, variant := range []string{"net-http-handshake", "handshake-listener"} {
		b.Run(variant, func(b *testing.B) {
			for range b.N {
				b.ReportMetric(connStackPerConn(b, variant == "handshake-listener", 500), "stack-B/conn")
			}
		})
	}
}

func connStackPerConn(b *testing.B, pre bool, n int) float64 {
	fx := newHandshakeFixture(b)
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	var addr string
	if pre {
		_, addr = serveHandshaken(b, fx, 10*time.Second, h)
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		hs := &http.Server{Handler: h, TLSConfig: fx.server.Clone()}
		go hs.ServeTLS(ln, "", "")
		b.Cleanup(func() { hs.Close() })
		addr = ln.Addr().String()
	}
	defer close(release)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.StackInuse
	var bodies []io.Closer
	defer func() {
		for _, c := range bodies {
			c.Close()
		}
	}()
	for range n {
		// One transport each: one connection each, as agents have.
		resp, err := h2Client(fx).Get("https://" + addr + "/")
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, resp.Body)
	}
	for range 3 { // stacks shrink during collections
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return float64(ms.StackInuse-before) / float64(n)
}

// gatedConfig is fx's server configuration whose GetConfigForClient, the
// first step of the server's part of a handshake (after the listener's
// slot is taken), counts its callers and waits for gate to close.
func gatedConfig(fx handshakeFixture, gate <-chan struct{}, inside, calls *atomic.Int64) *tls.Config {
	cfg := fx.server.Clone()
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		calls.Add(1)
		inside.Add(1)
		defer inside.Add(-1)
		<-gate
		return nil, nil
	}
	return cfg
}

// closeAccepted closes every connection hl hands over, until it closes.
func closeAccepted(hl *handshakeListener) {
	for {
		c, err := hl.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// gatedListener is a handshakeListener on loopback over gatedConfig,
// closed when the test ends.
func gatedListener(t *testing.T, fx handshakeFixture, gate <-chan struct{}, inside, calls *atomic.Int64, timeout time.Duration) *handshakeListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl := newHandshakeListener(ln, gatedConfig(fx, gate, inside, calls), timeout, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { hl.Close() })
	return hl
}

// waitUntil polls cond every 5 ms for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fleetAddr is where the slot tests' clients dial from: a loopback
// address that is not this machine's own (127.0.0.1 takes no slot).
var fleetAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// dialTLS handshakes with addr from fleetAddr and reports the outcome on
// the channel.
func dialTLS(fx handshakeFixture, addr string, out chan<- error) {
	dialTLSFrom(fx, addr, fleetAddr, out)
}

// dialTLSFrom handshakes with addr from local.
func dialTLSFrom(fx handshakeFixture, addr string, local *net.TCPAddr, out chan<- error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second, LocalAddr: local}, "tcp", addr, fx.client.Clone())
	if err == nil {
		c.Close()
	}
	out <- err
}

// At most a slot's worth of handshakes compute at once; the rest wait,
// counted, and all finish once the slots free.
func TestHandshakeSlotsBoundTheServersPart(t *testing.T) {
	fx := newHandshakeFixture(t)
	gate := make(chan struct{})
	var inside, calls atomic.Int64
	hl := gatedListener(t, fx, gate, &inside, &calls, 10*time.Second)
	go closeAccepted(hl)
	slots := cap(hl.slots)
	const extra = 3
	done := make(chan error, slots+extra)
	for range slots + extra {
		go dialTLS(fx, hl.Addr().String(), done)
	}
	waitUntil(t, "every slot taken and the rest waiting", func() bool {
		return inside.Load() == int64(slots) && hl.Stats().Waiting == extra
	})
	if got := calls.Load(); got != int64(slots) {
		t.Fatalf("%d handshakes reached the server's part with %d slots", got, slots)
	}
	close(gate)
	for range slots + extra {
		if err := <-done; err != nil {
			t.Errorf("handshake after the slots freed: %v", err)
		}
	}
	// The server counts a handshake once its side of it returns, which
	// may be just after the client's.
	waitUntil(t, "every handshake counted", func() bool { return hl.Stats().OK == int64(slots+extra) })
	if st := hl.Stats(); st.Failed != 0 || st.Waiting != 0 {
		t.Errorf("stats = %+v; want none failed or waiting", st)
	}
}

// A client on this machine (127.0.0.1) takes no slot: with every slot
// held and fleet clients waiting, its handshake completes at once.
func TestHandshakeFromThisMachineTakesNoSlot(t *testing.T) {
	fx := newHandshakeFixture(t)
	gate := make(chan struct{})
	defer close(gate)
	var inside, calls atomic.Int64
	hl := gatedListener(t, fx, gate, &inside, &calls, 10*time.Second)
	go closeAccepted(hl)
	slots := cap(hl.slots)
	held := make(chan error, slots+1)
	for range slots + 1 {
		go dialTLS(fx, hl.Addr().String(), held)
	}
	waitUntil(t, "every slot taken and one waiting", func() bool { return inside.Load() == int64(slots) && hl.Stats().Waiting == 1 })
	// The gate holds every handshake that reaches the server's part,
	// this one too: it got there with no slot while the fleet's wait.
	local := make(chan error, 1)
	go dialTLSFrom(fx, hl.Addr().String(), &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, local)
	waitUntil(t, "the local handshake past the slots", func() bool { return inside.Load() == int64(slots)+1 })
	if st := hl.Stats(); st.Waiting != 1 {
		t.Fatalf("stats %+v; want the fleet's one still waiting", st)
	}
	for _, a := range []string{"127.0.0.1:1", "[::1]:1"} {
		if ta, _ := net.ResolveTCPAddr("tcp", a); !fromThisMachine(ta) {
			t.Errorf("%s is not from this machine", a)
		}
	}
	for _, a := range []string{"127.0.0.2:1", "127.1.2.3:1", "10.0.0.1:1", "[::2]:1"} {
		if ta, _ := net.ResolveTCPAddr("tcp", a); fromThisMachine(ta) {
			t.Errorf("%s is from this machine", a)
		}
	}
}

// A handshake whose deadline passes while it waits for a slot fails
// without the server doing its part of it.
func TestHandshakeSlotWaitEndsAtTheDeadline(t *testing.T) {
	fx := newHandshakeFixture(t)
	gate := make(chan struct{})
	defer close(gate)
	var inside, calls atomic.Int64
	// Long enough for every held client's hello to arrive in time under
	// emulation (armv7 under qemu took longer than 300 ms for some of
	// them), short enough for the late one to wait it out.
	hl := gatedListener(t, fx, gate, &inside, &calls, 3*time.Second)
	slots := cap(hl.slots)
	held := make(chan error, slots)
	for range slots {
		go dialTLS(fx, hl.Addr().String(), held)
	}
	waitUntil(t, "every slot taken", func() bool { return inside.Load() == int64(slots) })
	late := make(chan error, 1)
	go dialTLS(fx, hl.Addr().String(), late)
	if err := <-late; err == nil {
		t.Fatal("a handshake that waited out its deadline for a slot succeeded")
	}
	waitUntil(t, "the late handshake counted as failed for want of a slot", func() bool { st := hl.Stats(); return st.Failed == 1 && st.Expired == 1 })
	if got := calls.Load(); got != int64(slots) {
		t.Errorf("%d handshakes reached the server's part; want %d (the late one must not)", got, slots)
	}
}

// stallConn passes its first write (the client's hello) and blocks every
// later one (its Finished) until the connection closes, after telling
// answered that the server's flight arrived. With deaf set it never
// reads either.
type stallConn struct {
	net.Conn
	deaf     bool
	writes   int
	answered chan<- struct{}
	closed   chan struct{}
}

func (c *stallConn) Read(b []byte) (int, error) {
	if c.deaf {
		<-c.closed
		return 0, net.ErrClosed
	}
	return c.Conn.Read(b)
}

func (c *stallConn) Write(b []byte) (int, error) {
	c.writes++
	if c.writes == 1 {
		return c.Conn.Write(b)
	}
	if c.writes == 2 {
		c.answered <- struct{}{}
	}
	<-c.closed
	return 0, net.ErrClosed
}

// A client slow to answer the server's flight (a long round trip), or
// one that never reads it, holds no slot: with a slot's worth of each in
// their handshake, another client is served at once.
func TestHandshakeSlotFreedWhileTheClientAnswers(t *testing.T) {
	fx := newHandshakeFixture(t)
	hl, addr := serveHandshaken(t, fx, 30*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	slots := cap(hl.slots)
	answered := make(chan struct{}, slots+1)
	closed := make(chan struct{})
	defer close(closed)
	for i := range 2 * (slots + 1) {
		raw, err := (&net.Dialer{LocalAddr: fleetAddr}).Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		tc := tls.Client(&stallConn{Conn: raw, deaf: i%2 == 1, answered: answered, closed: closed}, fx.client.Clone())
		go tc.Handshake() //nolint:errcheck // stalls until the test ends
	}
	for range slots + 1 {
		select {
		case <-answered:
		case <-time.After(10 * time.Second):
			t.Fatal("a stalled client never got the server's flight")
		}
	}
	waitUntil(t, "every slot free again", func() bool { return len(hl.slots) == 0 && hl.Stats().Waiting == 0 })
	c := h2Client(fx)
	c.Timeout = 5 * time.Second
	resp, err := c.Get("https://" + addr + "/")
	if err != nil {
		t.Fatalf("a client behind %d stalled clients (slots %d): %v", 2*(slots+1), slots, err)
	}
	resp.Body.Close()
}

// A client that leaves while its handshake waits for a slot (its own
// handshake timeout passed) costs no work once the slot frees: the
// server finds its connection closed and does not compute for it.
func TestHandshakeSlotWaiterThatLeftIsDropped(t *testing.T) {
	fx := newHandshakeFixture(t)
	gate := make(chan struct{})
	var inside, calls atomic.Int64
	hl := gatedListener(t, fx, gate, &inside, &calls, time.Minute)
	go closeAccepted(hl)
	slots := cap(hl.slots)
	held := make(chan error, slots)
	for range slots {
		go dialTLS(fx, hl.Addr().String(), held)
	}
	waitUntil(t, "every slot taken", func() bool { return inside.Load() == int64(slots) })
	raw, err := (&net.Dialer{LocalAddr: fleetAddr}).Dial("tcp", hl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	late := make(chan error, 1)
	go func() { late <- tls.Client(raw, fx.client.Clone()).Handshake() }()
	waitUntil(t, "the late hello waiting for a slot", func() bool { return hl.Stats().Waiting == 1 })
	raw.Close() // the client gives up
	if err := <-late; err == nil {
		t.Fatal("the late handshake succeeded on a closed connection")
	}
	close(gate)
	for range slots {
		if err := <-held; err != nil {
			t.Fatalf("a held handshake: %v", err)
		}
	}
	waitUntil(t, "the late handshake counted as abandoned", func() bool { st := hl.Stats(); return st.Abandoned == 1 && st.Failed == 1 })
	if got := calls.Load(); got != int64(slots) {
		t.Errorf("%d handshakes reached the server's part; want %d (not the one whose client left)", got, slots)
	}
}

// peerGone tells a closed peer from one that is only quiet, and takes
// nothing from the socket: a byte not yet read is still there, and the
// close behind it is seen once it is read (the handshake has read the
// client's hello when it asks).
func TestPeerGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if peerGone(s) {
		t.Fatal("a quiet open connection is gone")
	}
	c.Write([]byte("x"))
	c.Close()
	if peerGone(s) {
		t.Fatal("gone while a byte is unread")
	}
	b := make([]byte, 1)
	if n, err := s.Read(b); n != 1 || b[0] != 'x' {
		t.Fatalf("Read after peeking = %d %q, %v; want the byte", n, b[:n], err)
	}
	waitUntil(t, "the close seen", func() bool { return peerGone(s) })
}
