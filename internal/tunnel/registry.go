package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/yamux"
)

// ErrNoTunnel means the node has no tunnel open to this server.
var ErrNoTunnel = errors.New("tunnel: node has no tunnel open")

// Registry holds the open tunnel of every node on the server side. It is
// safe for concurrent use; the zero value is not: use NewRegistry.
type Registry struct {
	mu       sync.Mutex
	sessions map[string]session
	closed   bool
	now      func() time.Time // the controls' DetachGrace; tests set it
}

// session is a node's tunnel: a yamux session on a connection of its
// own (muxSession) or a control stream on the API connection (control).
type session interface {
	open(ctx context.Context) (net.Conn, error)
	IsClosed() bool
	Close() error
}

// muxSession is a tunnel dialled by the agent on a connection of its
// own.
type muxSession struct{ *yamux.Session }

// open opens a stream, giving up when ctx ends.
func (s muxSession) open(ctx context.Context) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := s.Open()
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{sessions: map[string]session{}, now: time.Now} }

// IsUpgrade reports whether r asks for a tunnel.
func IsUpgrade(r *http.Request) bool {
	return headerHas(r.Header, "Connection", "upgrade") && strings.EqualFold(r.Header.Get("Upgrade"), Protocol)
}

// headerHas reports whether a comma-separated header holds token.
func headerHas(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// Accept takes over the HTTP request r (already authenticated as node),
// answers 101 and registers the tunnel as node's, closing the one it
// replaces. It returns once the tunnel is registered; the session lives
// until the agent goes or Close. The caller must have checked IsUpgrade.
func (g *Registry) Accept(w http.ResponseWriter, node string) error {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return fmt.Errorf("tunnel: hijack: %w", err)
	}
	if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+Protocol+"\r\n\r\n"); err != nil {
		conn.Close()
		return fmt.Errorf("tunnel: answer upgrade: %w", err)
	}
	var rwc io.ReadWriteCloser = conn
	if brw.Reader.Buffered() > 0 {
		rwc = &bufferedConn{Reader: brw.Reader, Conn: conn}
	}
	sess, err := yamux.Client(rwc, serverMuxConfig())
	if err != nil {
		conn.Close()
		return fmt.Errorf("tunnel: %w", err)
	}
	// No goroutine waits for the session to end (one per agent was 8
	// KiB of stack at 10,000 agents): a closed session is replaced by
	// its agent's next tunnel, skipped by Connected and Dial, and
	// dropped by Nodes.
	return g.register(node, muxSession{sess})
}

// register makes sess node's tunnel, closing the one it replaces; if
// the registry is closed, it closes sess.
func (g *Registry) register(node string, sess session) error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		sess.Close()
		return errors.New("tunnel: registry closed")
	}
	old := g.sessions[node]
	g.sessions[node] = sess
	g.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Connected reports whether node has a tunnel open.
func (g *Registry) Connected(node string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sessions[node]
	return s != nil && !s.IsClosed()
}

// Nodes returns how many tunnels are open, dropping the closed ones
// (of agents gone and not back).
func (g *Registry) Nodes() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	for node, s := range g.sessions {
		if s.IsClosed() {
			delete(g.sessions, node)
		}
	}
	return len(g.sessions)
}

// Dial opens a stream to node's agent. It wraps ErrNoTunnel when the
// node has none.
func (g *Registry) Dial(ctx context.Context, node string) (net.Conn, error) {
	g.mu.Lock()
	s := g.sessions[node]
	g.mu.Unlock()
	if s == nil || s.IsClosed() {
		return nil, fmt.Errorf("node %s: %w", node, ErrNoTunnel)
	}
	c, err := s.open(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("tunnel to node %s: %w", node, err)
	}
	return c, nil
}

// Transport is an http.Transport whose connections are tunnel streams:
// a request to http://<node>/… goes to that node's agent.
func (g *Registry) Transport() *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			return g.Dial(ctx, host)
		},
		Proxy:               nil,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}

// Close closes every tunnel and refuses new ones.
func (g *Registry) Close() {
	g.mu.Lock()
	g.closed = true
	all := g.sessions
	g.sessions = map[string]session{}
	g.mu.Unlock()
	// Each Close waits for the session's send and receive loops to
	// end; one after the other, 9,000 of them took a server 15 s to
	// stop. They go at once.
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { s.Close() })
	}
	wg.Wait()
}

// Disconnect closes node's tunnel, if it has one (its agent dials
// again).
func (g *Registry) Disconnect(node string) {
	g.mu.Lock()
	s := g.sessions[node]
	delete(g.sessions, node)
	g.mu.Unlock()
	if s != nil {
		s.Close()
	}
}
