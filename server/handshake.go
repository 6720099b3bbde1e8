package server

import (
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/backoff"
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
type handshakeListener struct {
	inner   net.Listener
	cfg     *tls.Config
	timeout time.Duration
	log     *slog.Logger

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
		cfg:     cfg,
		timeout: timeout,
		log:     log,
		conns:   make(chan net.Conn),
		done:    make(chan struct{}),
	}
	go l.acceptLoop()
	return l
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
	tc := tls.Server(c, l.cfg)
	if err := c.SetDeadline(time.Now().Add(l.timeout)); err != nil {
		c.Close()
		return
	}
	if err := tc.Handshake(); err != nil {
		l.log.Debug("TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		tc.Close()
		return
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
