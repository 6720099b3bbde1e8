package streaming

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// Duplexer opens a full-duplex exchange with the server on the API
// connection; *client.Client is one.
type Duplexer interface {
	OpenDuplex(ctx context.Context, path string) (io.ReadWriteCloser, error)
}

// Client keeps the agent's tunnel to the server open and serves Handler
// on it. Create it with its fields set, then call Run once.
type Client struct {
	// API, when set, carries the tunnel as a stream of the agent's API
	// connection (OpenDuplex of tunnel.Path): no connection or
	// handshake of its own. When that fails with an error wrapping
	// errors.ErrUnsupported (HTTP/1 only, or a server without the
	// streamed tunnel), the tunnel is dialled with Dial instead.
	API Duplexer
	// Dial says how to dial the tunnel on a connection of its own.
	Dial    tunnel.DialConfig
	Handler http.Handler
	Clock   clock.Clock
	Logger  *slog.Logger
	// Backoff spaces reconnection attempts; the zero value waits 0.5 s
	// doubling to 30 s, with jitter.
	Backoff backoff.Backoff

	connected atomic.Bool
	streamed  atomic.Bool
}

// Streamed reports whether the tunnel open now is a stream of the API
// connection rather than a connection of its own.
func (c *Client) Streamed() bool { return c.connected.Load() && c.streamed.Load() }

// dial opens the tunnel: streamed when it can, else on a connection of
// its own.
func (c *Client) dial(ctx context.Context) (*yamux.Session, error) {
	if c.API != nil {
		conn, err := c.API.OpenDuplex(ctx, tunnel.Path)
		if err == nil {
			c.streamed.Store(true)
			return tunnel.AgentSession(conn)
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
	}
	c.streamed.Store(false)
	return tunnel.Dial(ctx, c.Dial)
}

// stableAfter is how long a tunnel must have lived for the next
// reconnection to start over from the shortest wait.
const stableAfter = time.Minute

// Connected reports whether the tunnel is open now.
func (c *Client) Connected() bool { return c.connected.Load() }

// Run dials the tunnel, serves it until it breaks, and dials again after
// a capped, jittered wait, until ctx ends; then it closes the tunnel and
// returns nil. Every failure is logged, none is fatal: the server may be
// away for a long time.
func (c *Client) Run(ctx context.Context) error {
	clk := clock.Or(c.Clock)
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for {
		sess, err := c.dial(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			wait := c.Backoff.Next()
			var refused *tunnel.RefusedError
			var status *api.StatusError
			if errors.As(err, &refused) || errors.As(err, &status) {
				log.Error("tunnel refused by the server", "err", err, "retry_in", wait)
			} else {
				log.Warn("tunnel: server not reachable", "err", err, "retry_in", wait)
			}
			if !clock.Sleep(ctx, clk, wait) {
				return nil
			}
			continue
		}
		opened := clk.Now()
		c.connected.Store(true)
		log.Info("tunnel open", "server", c.Dial.Server, "streamed", c.streamed.Load())
		srv := &http.Server{Handler: c.Handler, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
		stop := context.AfterFunc(ctx, func() { sess.Close() })
		err = srv.Serve(sess)
		stop()
		sess.Close()
		c.connected.Store(false)
		if ctx.Err() != nil {
			return nil
		}
		if clk.Now().Sub(opened) >= stableAfter {
			c.Backoff.Reset()
		}
		wait := c.Backoff.Next()
		log.Warn("tunnel closed; reconnecting", "err", err, "retry_in", wait)
		if !clock.Sleep(ctx, clk, wait) {
			return nil
		}
	}
}
