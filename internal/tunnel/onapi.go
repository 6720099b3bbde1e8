package tunnel

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The tunnel on the agent's API connection.
//
// An agent that reaches the server over HTTP/2 (every agent, unless a
// proxy on the way speaks only HTTP/1) opens no connection for its
// tunnel. It sends "POST /api/v1/skiff/tunnel" on the connection its
// watches and heartbeats already use, and the server's answer streams
// one line, {"open":"<id>"}, whenever the server wants to reach the
// agent. The agent then sends "POST /api/v1/skiff/tunnel/<id>", whose
// request and response bodies, both streamed, are one connection to the
// agent: the server speaks HTTP/1.1 on it as it does on a yamux stream.
// HTTP/2 gives each exchange its own flow-control window. What the
// server sends is framed (a 4-byte length, then as many bytes; a length
// of 0 ends it), so that the server can end its half and go on reading
// the agent's, as a port-forward needs: an HTTP/2 handler that returns
// ends both.
//
// An idle agent costs the server one stream and one goroutine, against a
// second TLS connection, its handshake after every restart (42 % of a
// restarted server's CPU with 9,000 agents) and yamux's two loops for a
// tunnel of its own.

// OpenTimeout bounds how long the server waits for an agent to answer an
// open line with its exchange.
const OpenTimeout = 30 * time.Second

// openLine is a line of the control stream.
type openLine struct {
	Open string `json:"open"`
}

// maxLine bounds a control line the agent reads.
const maxLine = 256

// ServeControl takes an agent's control stream, the request r (over
// HTTP/2, already authenticated as node): it answers 200, registers the
// tunnel as node's, replacing the one it had, and writes an open line
// for every exchange the server asks for, until the agent goes, the
// request's context ends or the tunnel is replaced or closed. The
// handler must call it last; it returns when the tunnel is over.
func (g *Registry) ServeControl(w http.ResponseWriter, r *http.Request, node string) error {
	if r.ProtoMajor < 2 {
		return errors.New("tunnel: a tunnel on the API connection needs HTTP/2")
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return fmt.Errorf("tunnel: answer: %w", err)
	}
	c := newControl(nil)
	if err := g.register(node, c); err != nil {
		return err
	}
	defer c.Close()
	for {
		select {
		case id := <-c.opens:
			line, _ := json.Marshal(openLine{Open: id})
			if _, err := w.Write(append(line, '\n')); err != nil {
				return nil
			}
			if err := rc.Flush(); err != nil {
				return nil
			}
		case <-c.done:
			return nil
		case <-r.Context().Done():
			return nil
		}
	}
}

// ServeExchange takes the exchange id of node's tunnel, the request r
// (over HTTP/2, already authenticated as node), hands it to the Dial
// waiting for it, and serves it until either end closes it. An id that
// is not one node's tunnel is waiting for is 404, whoever's it is.
func (g *Registry) ServeExchange(w http.ResponseWriter, r *http.Request, node, id string) error {
	if r.ProtoMajor < 2 {
		return errors.New("tunnel: an exchange needs HTTP/2")
	}
	g.mu.Lock()
	c, _ := g.sessions[node].(*control)
	g.mu.Unlock()
	var ch chan net.Conn
	if c != nil {
		ch = c.take(id)
	}
	if ch == nil {
		return ErrNoExchange
	}
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		ch <- closedConn{}
		return fmt.Errorf("tunnel: answer: %w", err)
	}
	x := &exchange{body: r.Body, w: w, rc: rc, node: node, done: make(chan struct{})}
	ch <- x // buffered: the dial takes it, or closes it if it gave up
	select {
	case <-x.done:
	case <-c.done:
	case <-r.Context().Done():
	}
	x.finish()
	return nil
}

// ErrNoExchange is the answer to an exchange no tunnel waits for.
var ErrNoExchange = errors.New("tunnel: no such exchange")

// control is the server's end of a tunnel on an API connection.
type control struct {
	opens  chan string
	queued chan struct{} // a token once an open is queued; capacity 1
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	pending map[string]chan net.Conn // by exchange id, each buffered 1
	// Read by shared streams (ControlReader) when now is set: closed
	// once none has read it for DetachGrace.
	now      func() time.Time
	readers  int
	detached time.Time
}

// newControl returns a control; now, when set, makes it one that
// shared streams read (AttachControl).
func newControl(now func() time.Time) *control {
	return &control{opens: make(chan string, 16), queued: make(chan struct{}, 1), done: make(chan struct{}),
		pending: map[string]chan net.Conn{}, now: now}
}

func (c *control) IsClosed() bool {
	select {
	case <-c.done:
		return true
	default:
	}
	if c.now == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readers == 0 && c.now().Sub(c.detached) > DetachGrace
}

func (c *control) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

// take removes the exchange id from the pending ones and returns its
// channel, or nil.
func (c *control) take(id string) chan net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := c.pending[id]
	delete(c.pending, id)
	return ch
}

// open asks the agent for an exchange and waits for it, up to
// OpenTimeout.
func (c *control) open(ctx context.Context) (net.Conn, error) {
	id := newExchangeID()
	ch := make(chan net.Conn, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	t := time.NewTimer(OpenTimeout)
	defer t.Stop()
	fail := func(err error) (net.Conn, error) {
		if c.take(id) == nil {
			// Taken by its exchange in the meantime: close it once
			// it is handed over.
			go func() { (<-ch).Close() }()
		}
		return nil, err
	}
	select {
	case c.opens <- id:
		select {
		case c.queued <- struct{}{}:
		default:
		}
	case <-c.done:
		return fail(ErrNoTunnel)
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-t.C:
		return fail(errors.New("tunnel: the agent's control stream is not being read"))
	}
	select {
	case conn := <-ch:
		if _, ok := conn.(closedConn); ok {
			return nil, errors.New("tunnel: the agent's exchange failed")
		}
		return conn, nil
	case <-c.done:
		return fail(ErrNoTunnel)
	case <-ctx.Done():
		return fail(ctx.Err())
	case <-t.C:
		return fail(fmt.Errorf("tunnel: the agent did not answer within %v", OpenTimeout))
	}
}

func newExchangeID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidExchangeID reports whether id has the form of an exchange id.
func ValidExchangeID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// exchange is the server's end of one exchange: it reads the request
// body and writes the answer in frames, flushing every write. Close ends
// the server's half only (as a yamux stream's Close does); the exchange
// is over once the agent has ended its half too, or reset it.
type exchange struct {
	body io.ReadCloser
	w    io.Writer
	rc   *http.ResponseController
	node string

	rmu, wmu  sync.Mutex // a read, a write in progress; none after finish
	rdone     bool       // finished, under rmu
	wdone     bool       // finished, under wmu
	wclosed   bool       // under wmu
	readEOF   atomic.Bool
	writeDone atomic.Bool
	once      sync.Once
	done      chan struct{} // both halves ended
}

func (x *exchange) Read(p []byte) (int, error) {
	x.rmu.Lock()
	defer x.rmu.Unlock()
	if x.rdone {
		return 0, net.ErrClosed
	}
	n, err := x.body.Read(p)
	if errors.Is(err, io.EOF) && !x.readEOF.Swap(true) && x.writeDone.Load() {
		x.end()
	}
	return n, err
}

// maxFrame bounds a frame's payload.
const maxFrame = 64 << 10

func (x *exchange) Write(p []byte) (int, error) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.wdone || x.wclosed {
		return 0, net.ErrClosed
	}
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), maxFrame)]
		if err := x.frame(chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

// frame writes one frame and flushes it; the caller holds wmu.
func (x *exchange) frame(b []byte) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := x.w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := x.w.Write(b); err != nil {
		return err
	}
	return x.rc.Flush()
}

// CloseWrite ends the server's half: the agent reads the end of its
// stream.
func (x *exchange) CloseWrite() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.wdone || x.wclosed {
		return nil
	}
	x.wclosed = true
	err := x.frame(nil)
	x.writeDone.Store(true)
	if x.readEOF.Load() {
		x.end()
	}
	return err
}

// Close ends the server's half; see exchange.
func (x *exchange) Close() error { return x.CloseWrite() }

// end says both halves are over.
func (x *exchange) end() { x.once.Do(func() { close(x.done) }) }

// finish ends the exchange for good, before its handler returns: a
// write deadline in the past resets the stream, which unblocks a write
// waiting for the agent's window, and closing the body unblocks a read;
// then it waits for both to return.
func (x *exchange) finish() {
	clean := x.readEOF.Load() && x.writeDone.Load()
	x.end()
	if !clean {
		_ = x.rc.SetWriteDeadline(time.Unix(1, 0))
	}
	_ = x.body.Close()
	x.rmu.Lock()
	x.rdone = true
	x.rmu.Unlock()
	x.wmu.Lock()
	x.wdone = true
	x.wmu.Unlock()
}

func (x *exchange) LocalAddr() net.Addr  { return tunnelAddr("server") }
func (x *exchange) RemoteAddr() net.Addr { return tunnelAddr(x.node) }
func (x *exchange) SetDeadline(t time.Time) error {
	return errors.Join(x.SetReadDeadline(t), x.SetWriteDeadline(t))
}
func (x *exchange) SetReadDeadline(t time.Time) error  { return x.rc.SetReadDeadline(t) }
func (x *exchange) SetWriteDeadline(t time.Time) error { return x.rc.SetWriteDeadline(t) }

// tunnelAddr names an end of an exchange.
type tunnelAddr string

func (a tunnelAddr) Network() string { return "tunnel" }
func (a tunnelAddr) String() string  { return string(a) }

// closedConn tells a dial its exchange failed before it began.
type closedConn struct{ net.Conn }

func (closedConn) Close() error { return nil }

// The agent's end.

// ReadOpens reads the control stream r and calls open with the id of
// every exchange the server asks for, until r ends or fails.
func ReadOpens(r io.Reader, open func(id string)) error {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return fmt.Errorf("tunnel: control line longer than %d bytes", maxLine)
			}
			return err
		}
		var l openLine
		if err := json.Unmarshal(line, &l); err != nil {
			return fmt.Errorf("tunnel: control line: %w", err)
		}
		if !ValidExchangeID(l.Open) {
			return fmt.Errorf("tunnel: control line: exchange id %q", l.Open)
		}
		open(l.Open)
	}
}

// Listener hands the agent's exchanges to an http.Server: Deliver puts
// one in, Accept takes it out. The zero value is not usable: use
// NewListener.
type Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewListener returns an open Listener.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Deliver hands x, an exchange as the agent opened it (its writes are
// the request body, its reads the answer), to Accept; after Close it
// closes x.
func (l *Listener) Deliver(x io.ReadWriteCloser) {
	c := newAgentConn(x)
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *Listener) Addr() net.Addr { return tunnelAddr("agent") }

// agentConn is an exchange as the agent's http.Server sees it: it reads
// the server's frames, and keeps read deadlines, which the server needs
// to hijack a connection (exec, attach and port-forward are upgraded).
// A goroutine reads ahead, one frame's bytes at a time, for as long as
// the exchange lasts.
type agentConn struct {
	x      io.ReadWriteCloser
	chunks chan readResult
	rmu    sync.Mutex // one Read at a time
	rest   []byte
	eof    error

	mu       sync.Mutex
	deadline chan struct{} // closed when the read deadline passes
	timer    *time.Timer
	drain    *time.Timer
	closed   chan struct{}
	once     sync.Once
}

type readResult struct {
	b   []byte
	err error
}

func newAgentConn(x io.ReadWriteCloser) *agentConn {
	c := &agentConn{x: x, chunks: make(chan readResult), deadline: make(chan struct{}), closed: make(chan struct{})}
	go c.readAhead()
	return c
}

// readAhead reads the server's frames and hands their bytes to Read.
// Once the server's half has ended, or the agent closed the exchange, it
// reads on to the end of the answer (the server ends it when both
// halves are over), so that the server reads the agent's half to its
// end rather than a reset; then it closes the exchange.
func (c *agentConn) readAhead() {
	br := bufio.NewReaderSize(c.x, 4096)
	defer func() {
		_, _ = io.Copy(io.Discard, br)
		c.x.Close()
		c.mu.Lock()
		if c.drain != nil {
			c.drain.Stop()
		}
		c.mu.Unlock()
	}()
	var hdr [4]byte
	// Two buffers in turn: Read copies out of one (Reads are one at a
	// time) while the next is filled, and a buffer is filled again
	// only once the Read after the one that took it has begun.
	bufs := [2][]byte{make([]byte, 8<<10), make([]byte, 8<<10)}
	turn := 0
	send := func(r readResult) bool {
		select {
		case c.chunks <- r:
			return true
		case <-c.closed:
			return false
		}
	}
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			send(readResult{err: fmt.Errorf("tunnel: exchange: %w", io.ErrUnexpectedEOF)})
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n == 0 {
			send(readResult{err: io.EOF})
			return
		}
		if n > maxFrame {
			send(readResult{err: fmt.Errorf("tunnel: exchange: a frame of %d bytes", n)})
			return
		}
		for n > 0 {
			buf := bufs[turn]
			turn ^= 1
			m, err := br.Read(buf[:min(int(n), len(buf))])
			if m > 0 && !send(readResult{b: buf[:m]}) {
				return
			}
			if err != nil {
				send(readResult{err: fmt.Errorf("tunnel: exchange: %w", io.ErrUnexpectedEOF)})
				return
			}
			n -= uint32(m)
		}
	}
}

func (c *agentConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if len(c.rest) == 0 && c.eof == nil {
		c.mu.Lock()
		deadline := c.deadline
		c.mu.Unlock()
		select {
		case r := <-c.chunks:
			// r.b is the reader's buffer: keep a copy of what p
			// cannot take.
			n := copy(p, r.b)
			if n < len(r.b) {
				c.rest = append(c.rest[:0], r.b[n:]...)
			}
			if r.err != nil {
				c.eof = r.err
			}
			if n > 0 || r.err == nil {
				return n, nil
			}
			return 0, r.err
		case <-deadline:
			return 0, os.ErrDeadlineExceeded
		case <-c.closed:
			return 0, net.ErrClosed
		}
	}
	if len(c.rest) > 0 {
		n := copy(p, c.rest)
		c.rest = c.rest[n:]
		return n, nil
	}
	return 0, c.eof
}

func (c *agentConn) Write(p []byte) (int, error) { return c.x.Write(p) }

// CloseWrite ends the agent's half: the server reads the end of the
// request body.
func (c *agentConn) CloseWrite() error {
	if cw, ok := c.x.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close ends the agent's half and stops reading; the exchange ends when
// the server's half does, or after drainTimeout.
func (c *agentConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		_ = c.CloseWrite()
		c.mu.Lock()
		c.drain = time.AfterFunc(drainTimeout, func() { c.x.Close() })
		c.mu.Unlock()
	})
	return nil
}

// drainTimeout bounds how long a closed exchange waits for the server to
// end its half.
const drainTimeout = 10 * time.Second

func (c *agentConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	old := c.deadline
	ch := make(chan struct{})
	c.deadline = ch
	switch {
	case t.IsZero():
	case !t.After(time.Now()):
		close(ch)
		// A read waiting on the old deadline returns now.
		select {
		case <-old:
		default:
			close(old)
		}
	default:
		c.timer = time.AfterFunc(time.Until(t), func() { close(ch) })
	}
	return nil
}

func (c *agentConn) SetDeadline(t time.Time) error  { return c.SetReadDeadline(t) }
func (*agentConn) SetWriteDeadline(time.Time) error { return nil }
func (*agentConn) LocalAddr() net.Addr              { return tunnelAddr("agent") }
func (*agentConn) RemoteAddr() net.Addr             { return tunnelAddr("server") }
