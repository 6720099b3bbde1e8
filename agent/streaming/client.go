package streaming

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// Client keeps the agent's tunnel to the server open and serves Handler
// on it. Create it with its fields set, then call Run once.
type Client struct {
	Dial    tunnel.DialConfig
	Handler http.Handler
	Clock   clock.Clock
	Logger  *slog.Logger
	// Backoff spaces reconnection attempts; the zero value waits 0.5 s
	// doubling to 30 s, with jitter.
	Backoff backoff.Backoff

	connected atomic.Bool
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
		sess, err := tunnel.Dial(ctx, c.Dial)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			wait := c.Backoff.Next()
			var refused *tunnel.RefusedError
			if errors.As(err, &refused) {
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
		log.Info("tunnel open", "server", c.Dial.Server)
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
