package tunnel

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"
)

// The tunnel as a stream of the agent's API connection.
//
// An agent that reaches the server over HTTP/2 (every agent, unless a
// proxy on the way speaks only HTTP/1) does not dial a second connection
// for its tunnel: it sends "POST /api/v1/skiff/tunnel" on the connection
// its watches and heartbeats already use, and the request body and the
// response body, both streamed, carry the yamux session. One TLS
// handshake an agent instead of two after a server restart (they were
// 42 % of the restarted server's CPU with 9,000 agents), and one file
// and one connection on each side.

// ServeStream takes an agent's tunnel carried by the HTTP/2 request r
// (already authenticated as node): it answers 200, registers the tunnel
// as node's, replacing the one it had, and serves it until the agent
// goes, the request's context ends or the registry closes it. The
// handler must call it last; it returns when the tunnel is over.
func (g *Registry) ServeStream(w http.ResponseWriter, r *http.Request, node string) error {
	if r.ProtoMajor < 2 {
		return errors.New("tunnel: a streamed tunnel needs HTTP/2")
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return fmt.Errorf("tunnel: answer: %w", err)
	}
	c := &streamConn{body: r.Body, w: w, rc: rc}
	sess, err := yamux.Client(c, serverMuxConfig())
	if err != nil {
		return fmt.Errorf("tunnel: %w", err)
	}
	if err := g.register(node, sess); err != nil {
		return err
	}
	select {
	case <-sess.CloseChan():
	case <-r.Context().Done():
	}
	// Close returns once yamux's loops are done with c: nothing writes
	// to w after this handler returns.
	sess.Close()
	return nil
}

// streamConn is the server's end of a streamed tunnel: it reads the
// request body and writes the response, flushing every write (yamux
// writes whole frames).
type streamConn struct {
	body   io.ReadCloser
	w      io.Writer
	rc     *http.ResponseController
	mu     sync.Mutex // one write at a time, none after Close
	closed atomic.Bool
}

func (c *streamConn) Read(p []byte) (int, error) { return c.body.Read(p) }

func (c *streamConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return 0, io.ErrClosedPipe
	}
	n, err := c.w.Write(p)
	if err == nil {
		err = c.rc.Flush()
	}
	return n, err
}

// Close ends both halves: a deadline in the past resets the stream,
// which unblocks a write waiting for the agent's window, and closing
// the body unblocks the read.
func (c *streamConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	_ = c.rc.SetWriteDeadline(time.Unix(1, 0))
	return c.body.Close()
}

// AgentSession starts the agent's end of a tunnel over conn, a stream
// the agent opened to the server (the body pair of its streamed POST):
// the agent accepts the streams the server opens. Closing the session
// closes conn.
func AgentSession(conn io.ReadWriteCloser) (*yamux.Session, error) {
	sess, err := yamux.Server(conn, muxConfig())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("tunnel: %w", err)
	}
	return sess, nil
}
