package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/tlsutil"
)

// handshakeListener is a TLS listener that completes each connection's
// handshake in a goroutine of its own before Accept returns it, instead of
// in the goroutine net/http then keeps for the connection's whole life.
//
// Why: a goroutine's stack grows to what it once needed and shrinks only
// while it uses less than a quarter of it. The TLS server handshake
// (certificate signing, key exchange) needs more than 8 KiB of stack, so a
// connection handshaken by net/http keeps a 16 KiB stack in its serving
// goroutine for as long as it lives, though HTTP/2's serve loop needs a
// few KiB. An agent holds its connection for months: with 10,000 agents
// that was 80 MiB of stacks, and as much again of heap headroom, since
// the collector's goal counts stacks. Handshaken here, the stack that grew
// is freed with the short-lived goroutine.
//
// Accept returns *tls.Conn values whose handshake is done, so net/http
// (Server.Serve with a TLSConfig naming "h2") still negotiates HTTP/2 from
// them. A handshake that fails or outlasts timeout closes its connection,
// as net/http's own would. Close stops the accept loop, closes the inner
// listener and closes the connections handshaken but not yet accepted.
//
// The server's part of a handshake, from the client's hello read to its
// own flight written (key exchange, signature), runs in at most
// cpuSlots handshakes at once (sixteen a core); the others wait for a
// slot without using a core. Why: when a restarted server meets its whole fleet at once,
// every handshake running at once shares the cores, so each takes as
// long as all of them, and past the clients' handshake timeout (10 s) all
// that work is thrown away and tried again. With 10,000 agents the first
// 3,000 took 27 s to come back that way. In slots, handshakes finish at
// the rate the cores allow, oldest first; one that waited out its
// deadline is closed without the work. The wait for the client's answer
// (a round trip, long on a slow link) holds no slot, and a client on this
// machine itself (127.0.0.1, ::1) needs none.
type handshakeListener struct {
	inner   net.Listener
	cfg     *tls.Config // cfg with the slot wait added
	timeout time.Duration
	log     *slog.Logger
	slots   chan struct{}

	// Handshakes done, of those resumed sessions, failed, failed for
	// want of a slot before their deadline and failed because the client
	// left while it waited for one (both among the failed); waiting for
	// a slot now.
	ok, resumed, failed, expired, abandoned, waiting atomic.Int64

	conns chan net.Conn
	done  chan struct{}

	closeOnce sync.Once
	err       error // why the listener ended: written once, before done closes
}

// newHandshakeListener starts the accept loop over inner. cfg must not be
// changed afterwards (it is used by every handshake concurrently).
func newHandshakeListener(inner net.Listener, cfg *tls.Config, timeout time.Duration, log *slog.Logger) *handshakeListener {
	l := &handshakeListener{
		inner:   inner,
		timeout: timeout,
		log:     log,
		slots:   make(chan struct{}, cpuSlots()),
		conns:   make(chan net.Conn),
		done:    make(chan struct{}),
	}
	l.cfg = cfg.Clone()
	next := cfg.GetConfigForClient
	l.cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		if sc, ok := hello.Conn.(*slotConn); ok {
			if err := sc.acquire(); err != nil {
				return nil, err
			}
		}
		if next != nil {
			return next(hello)
		}
		return nil, nil
	}
	go l.acceptLoop()
	return l
}

// cpuSlots is how many handshakes compute at once: sixteen a core. Not
// one a core: a slot's holder waits for a core like any goroutine, and on
// a saturated server that wait (up to 100 ms at p99.9 with 10,000 agents)
// is far longer than the half millisecond of work, so two slots let
// through a few dozen handshakes a second, and a reconnecting fleet's
// handshakes waited out their 10 s deadline by the thousand. Sixteen a
// core still keep the work in flight a few milliseconds long.
func cpuSlots() int { return 16 * runtime.GOMAXPROCS(0) }

// HandshakeStats is what the listener counts since it started:
// handshakes done (and of those, resumed sessions) and failed (a timeout,
// a bad peer, a deadline passed waiting for a slot), of the failed those
// that never got a slot and those whose client left while they waited
// for one, and those waiting for a slot now.
type HandshakeStats struct{ OK, Resumed, Failed, Expired, Abandoned, Waiting int64 }

// Stats returns the listener's counts.
func (l *handshakeListener) Stats() HandshakeStats {
	return HandshakeStats{OK: l.ok.Load(), Resumed: l.resumed.Load(), Failed: l.failed.Load(), Expired: l.expired.Load(),
		Abandoned: l.abandoned.Load(), Waiting: l.waiting.Load()}
}

// slotConn is a connection in its handshake. It holds one of the
// listener's slots from when the client's hello has been read
// (GetConfigForClient) until the server's flight is written (its first
// Write), or the handshake ends.
type slotConn struct {
	net.Conn
	l        *handshakeListener
	deadline time.Time
	local    bool // from 127.0.0.1 or ::1: no slot
	held     atomic.Bool
}

// fromThisMachine reports whether addr is 127.0.0.1 or ::1, the address
// a client on this machine dials from by default. Other loopback
// addresses (127.0.0.0/8) are not: a test fleet comes from those.
func fromThisMachine(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && (ta.IP.Equal(net.IPv4(127, 0, 0, 1)) || ta.IP.Equal(net.IPv6loopback))
}

// errSlotDeadline ends a handshake whose deadline passed while it waited
// for a slot.
var errSlotDeadline = errors.New("handshake deadline passed waiting for a slot")

// errPeerGone ends a handshake whose client closed its connection while
// it waited for a slot.
var errPeerGone = errors.New("the client left while its handshake waited for a slot")

// acquire waits for a slot until the connection's deadline. A
// connection from this machine's own loopback address (127.0.0.1 or ::1:
// systemd's and a monitor's probes of /readyz, the server's own agent)
// takes none: a restarted server with 10,000 agents queued for slots
// left its readiness probe unanswered for a minute.
func (c *slotConn) acquire() error {
	if c.local {
		return nil
	}
	select {
	case c.l.slots <- struct{}{}:
		c.held.Store(true)
		return nil
	default:
	}
	c.l.waiting.Add(1)
	defer c.l.waiting.Add(-1)
	t := time.NewTimer(time.Until(c.deadline))
	defer t.Stop()
	select {
	case c.l.slots <- struct{}{}:
		c.held.Store(true)
		// A client that waited may have given up (its own handshake
		// timeout): the key exchange and signature for it would be
		// thrown away, and a reconnecting fleet's handshakes failed
		// by the thousand that way.
		if peerGone(c.Conn) {
			c.release()
			return errPeerGone
		}
		return nil
	case <-t.C:
		return errSlotDeadline
	case <-c.l.done:
		return fmt.Errorf("listener closed: %w", net.ErrClosed)
	}
}

// release gives the slot back, once.
func (c *slotConn) release() {
	if c.held.CompareAndSwap(true, false) {
		<-c.l.slots
	}
}

// Write writes, then releases the slot: the server's flight is out, and
// what is left is waiting for the client.
func (c *slotConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.release()
	return n, err
}

// acceptLoop accepts raw connections and starts a handshake for each. A
// temporary accept error (EMFILE under a reconnect storm, for one) is
// retried after a capped back-off, as net/http's own loop does; any other
// error, or Close, ends the loop.
func (l *handshakeListener) acceptLoop() {
	bo := backoff.Backoff{Min: 5 * time.Millisecond, Max: time.Second}
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if isTemporary(err) {
				select {
				case <-time.After(bo.Next()):
					continue
				case <-l.done:
					return
				}
			}
			l.stop(err)
			return
		}
		bo.Reset()
		go l.handshake(c)
	}
}

// isTemporary reports whether an accept error is one net/http retries
// (the deprecated Temporary method is still what the net package sets for
// EMFILE, ENFILE and ECONNABORTED).
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// handshake runs c's TLS handshake within the timeout (a deadline on the
// connection: it bounds a silent peer and one that stops reading alike)
// and hands the connection to Accept, or closes it.
func (l *handshakeListener) handshake(c net.Conn) {
	sc := &slotConn{Conn: c, l: l, deadline: time.Now().Add(l.timeout), local: fromThisMachine(c.RemoteAddr())}
	tc := tls.Server(sc, l.cfg)
	if err := c.SetDeadline(sc.deadline); err != nil {
		c.Close()
		return
	}
	err := tc.Handshake()
	sc.release()
	if err != nil {
		l.failed.Add(1)
		switch {
		case errors.Is(err, errSlotDeadline):
			l.expired.Add(1)
		case errors.Is(err, errPeerGone):
			l.abandoned.Add(1)
		}
		l.log.Debug("TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		tc.Close()
		return
	}
	l.ok.Add(1)
	if tc.ConnectionState().DidResume {
		l.resumed.Add(1)
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		tc.Close()
		return
	}
	select {
	case l.conns <- tc:
	case <-l.done:
		tc.Close()
	}
}

// Accept returns the next connection whose handshake is done.
func (l *handshakeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, l.err // written before done closed
	}
}

// stop records why the listener ended and releases every waiter, once.
func (l *handshakeListener) stop(err error) {
	l.closeOnce.Do(func() {
		l.err = err
		close(l.done)
	})
}

// Close closes the inner listener and ends Accept with net.ErrClosed.
func (l *handshakeListener) Close() error {
	l.stop(net.ErrClosed)
	return l.inner.Close()
}

// Addr is the inner listener's address.
func (l *handshakeListener) Addr() net.Addr { return l.inner.Addr() }

// SetSessionTicketKeys replaces the keys that seal and open session
// tickets (tls.Config.SetSessionTicketKeys; safe during handshakes).
func (l *handshakeListener) SetSessionTicketKeys(keys [][32]byte) {
	l.cfg.SetSessionTicketKeys(keys)
}

// ticketKeyCheck is how often the session ticket keys are derived again:
// a new period's key is in use within this of the period's start.
const ticketKeyCheck = time.Hour

// rotateTicketKeys sets l's session ticket keys for the clock's time every
// ticketKeyCheck until ctx ends (tlsutil.SessionTicketKeys; the keys of
// the start are set before the server listens).
func rotateTicketKeys(ctx context.Context, l *handshakeListener, ca *tlsutil.CA, clk clock.Clock, log *slog.Logger) {
	t := clk.NewTicker(ticketKeyCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		keys, err := tlsutil.SessionTicketKeys(ca, clk.Now())
		if err != nil {
			log.Warn("session ticket keys not rotated; the previous ones stay", "err", err)
			continue
		}
		l.SetSessionTicketKeys(keys)
	}
}

// peerGone reports whether c's peer has closed or reset the connection,
// without waiting and without taking any byte: a peek at the socket that
// finds its end (or an error other than "nothing yet"). A connection that
// is not a socket is never gone.
func peerGone(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
		return true // done: never wait for readiness
	})
	return gone
}
