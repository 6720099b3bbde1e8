package streaming

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// API opens exchanges with the server on the agent's API connection;
// *client.Client is one. Both fail with an error wrapping
// errors.ErrUnsupported when the connection is HTTP/1 or the server has
// no such endpoint.
type API interface {
	// OpenStream sends a POST and returns the streamed answer.
	OpenStream(ctx context.Context, path string) (io.ReadCloser, error)
	// OpenDuplex sends a POST whose body and answer both stream.
	OpenDuplex(ctx context.Context, path string) (io.ReadWriteCloser, error)
}

// SharedStream is the agent's shared stream: client.MuxedWatches.
type SharedStream interface {
	// Shared reports whether the server takes shared streams.
	Shared() bool
	// OpenFeed opens the lines of path on the shared stream.
	OpenFeed(ctx context.Context, path string, query url.Values) (io.ReadCloser, error)
}

// Client keeps the agent's tunnel to the server open and serves Handler
// on it. Create it with its fields set, then call Run once.
type Client struct {
	// API, when set, carries the tunnel on the agent's API connection
	// (tunnel.ReadOpens): no connection or handshake of its own. When
	// that fails with an error wrapping errors.ErrUnsupported (HTTP/1
	// only, or a server of an earlier release), the tunnel is dialled
	// with Dial instead.
	API API
	// Shared, when set and sharing, carries the tunnel's control lines
	// on the agent's shared stream (api/client.WatchMux, beside its
	// watches), so the control costs no stream of its own; the
	// exchanges still go through API.
	Shared SharedStream
	// Dial says how to dial the tunnel on a connection of its own.
	Dial    tunnel.DialConfig
	Handler http.Handler
	Clock   clock.Clock
	Logger  *slog.Logger
	// Backoff spaces reconnection attempts; the zero value waits 0.5 s
	// doubling to 30 s, with jitter.
	Backoff backoff.Backoff

	connected atomic.Bool
	onAPI     atomic.Bool
	// carried reports, for a control on the shared stream, whether a
	// stream the server accepted carries it now; nil otherwise.
	carried atomic.Pointer[func() bool]
}

// maxOpening bounds the exchanges the agent opens at once.
const maxOpening = 32

// stableAfter is how long a tunnel must have lived for the next
// reconnection to start over from the shortest wait.
const stableAfter = time.Minute

// Connected reports whether the tunnel is open now.
func (c *Client) Connected() bool {
	if !c.connected.Load() {
		return false
	}
	if f := c.carried.Load(); f != nil {
		return (*f)()
	}
	return true
}

// OnAPIConnection reports whether the tunnel open now is carried on the
// API connection rather than a connection of its own.
func (c *Client) OnAPIConnection() bool { return c.Connected() && c.onAPI.Load() }

// Run opens the tunnel, serves it until it breaks, and opens it again
// after a capped, jittered wait, until ctx ends; then it closes the
// tunnel and returns nil. Every failure is logged, none is fatal: the
// server may be away for a long time.
func (c *Client) Run(ctx context.Context) error {
	clk := clock.Or(c.Clock)
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for {
		serve, err := c.open(ctx, log)
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
		log.Info("tunnel open", "server", c.Dial.Server, "on_api_connection", c.onAPI.Load())
		err = serve()
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

// open opens the tunnel, on the API connection when it can, and returns
// what serves it until it breaks or ctx ends.
func (c *Client) open(ctx context.Context, log *slog.Logger) (func() error, error) {
	if c.API != nil && c.Shared != nil && c.Shared.Shared() {
		control, err := c.Shared.OpenFeed(ctx, tunnel.Path, nil)
		if err == nil {
			c.onAPI.Store(true)
			if cb, ok := control.(interface{ Carried() bool }); ok {
				f := cb.Carried
				c.carried.Store(&f)
			}
			return func() error { return c.serveControl(ctx, control, log) }, nil
		}
	}
	c.carried.Store(nil)
	if c.API != nil {
		control, err := c.API.OpenStream(ctx, tunnel.Path)
		if err == nil {
			c.onAPI.Store(true)
			return func() error { return c.serveControl(ctx, control, log) }, nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
	}
	c.onAPI.Store(false)
	sess, err := tunnel.Dial(ctx, c.Dial)
	if err != nil {
		return nil, err
	}
	return func() error {
		stop := context.AfterFunc(ctx, func() { sess.Close() })
		defer stop()
		defer sess.Close()
		return c.serve(sess, log)
	}, nil
}

// serve serves Handler on ln until ln fails.
func (c *Client) serve(ln net.Listener, log *slog.Logger) error {
	srv := &http.Server{Handler: c.Handler, ReadHeaderTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	defer srv.Close()
	return srv.Serve(ln)
}

// serveControl reads the control stream and opens each exchange the
// server asks for, serving Handler on it, until the stream ends or ctx
// does. Exchanges already upgraded (exec, attach, port-forward) outlive
// it: each is a stream of its own on the connection.
func (c *Client) serveControl(ctx context.Context, control io.ReadCloser, log *slog.Logger) error {
	stop := context.AfterFunc(ctx, func() { control.Close() })
	defer stop()
	defer control.Close()
	ln := tunnel.NewListener()
	served := make(chan error, 1)
	go func() { served <- c.serve(ln, log) }()
	defer func() {
		ln.Close()
		<-served
	}()
	opening := make(chan struct{}, maxOpening)
	return tunnel.ReadOpens(control, func(id string) {
		select {
		case opening <- struct{}{}:
		default:
			log.Warn("tunnel: too many exchanges opening; one refused", "limit", maxOpening)
			return
		}
		go func() {
			defer func() { <-opening }()
			x, err := c.API.OpenDuplex(ctx, tunnel.Path+"/"+id)
			if err != nil {
				log.Warn("tunnel: open an exchange", "err", err)
				return
			}
			ln.Deliver(x)
		}()
	})
}
