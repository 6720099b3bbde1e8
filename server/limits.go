package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/peerfeed"
	"github.com/skiffhq/skiff/internal/tunnel"
	"github.com/skiffhq/skiff/server/apiserver"
)

// Defaults of the request limits (Config.BodyReadTimeout,
// MaxConnsPerClient and MaxRequestsInFlight).
const (
	// DefaultBodyReadTimeout bounds how long a request body may take to
	// arrive: 3 MiB in 60 s is 50 KiB/s, slow for any real link.
	DefaultBodyReadTimeout = 60 * time.Second
	// DefaultMaxConnsPerClient caps the open connections of one address
	// (loopback aside).
	DefaultMaxConnsPerClient = 256
	// DefaultMaxRequestsInFlight caps the requests being served at once,
	// long-running ones (watches, followed logs, streams) excepted, as
	// Kubernetes' --max-requests-inflight.
	DefaultMaxRequestsInFlight = 400
	// inFlightRetryAfter is the Retry-After of a 429 for a full server.
	inFlightRetryAfter = 1
)

// limitBodyRead gives a request's body a read deadline of d from when the
// handler starts, and lifts it once the body is read, so a client that
// declares a body and never sends it is cut off while a slow handler (or
// the connection's next request) is not. Requests without a body, which
// include every watch and stream upgrade, are left alone.
func limitBodyRead(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if d > 0 && r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 && !isLongRunning(r) {
				rc := http.NewResponseController(w)
				if err := rc.SetReadDeadline(time.Now().Add(d)); err == nil {
					r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// deadlineBody lifts the connection's read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		b.lift()
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.lift()
	return b.ReadCloser.Close()
}

// lift clears the deadline; after a timeout the connection is done anyway.
func (b *deadlineBody) lift() {
	// An error means the connection is gone: nothing left to lift.
	b.once.Do(func() { b.rc.SetReadDeadline(time.Time{}) })
}

// isLongRunning reports requests that may legitimately last for as long
// as the client wants: watches, followed logs, and upgraded streams (exec,
// attach, port-forward). They are not counted as in flight and their
// bodies (a streaming request body, say) have no deadline. It is the one
// place that knows them: an endpoint that streams for long, such as an
// agent tunnel, must be recognised here.
func isLongRunning(r *http.Request) bool {
	switch {
	case isTrueParam(queryParam(r, "watch")), isTrueParam(queryParam(r, "follow")):
		return true
	case strings.Contains(r.URL.Path, "/watch/"), r.URL.Path == peerfeed.Path, r.URL.Path == apiserver.WatchesPath, strings.HasPrefix(r.URL.Path, tunnel.Path):
		return true
	case r.Header.Get("Upgrade") != "":
		return true
	}
	for _, sub := range []string{"/exec", "/attach", "/portforward", "/proxy"} {
		if strings.HasSuffix(r.URL.Path, sub) {
			return true
		}
	}
	return false
}

func isTrueParam(s string) bool { return s == "true" || s == "1" }

// queryParam is r's first value of query parameter name, without
// parsing a query that is not there (a fleet's heartbeats and reports
// carry none; parsing allocates).
func queryParam(r *http.Request, name string) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return r.URL.Query().Get(name)
}

// limitInFlight answers 429 with a Retry-After when limit requests other
// than long-running ones and the health probes are already being served.
// The lightweight heartbeat has its own slots (a quarter of limit, at least
// one): it reads no store, so it is served while slow requests (status
// writes waiting for the store) fill the rest, and a fleet's liveness
// does not depend on how busy the store is — as Kubernetes' priority and
// fairness keeps node leases apart from other traffic. A heartbeat that
// finds its slots full waits for one, up to beatQueueWait, before its 429
// (priority and fairness queues too): the beat's connection, TLS and
// HTTP/2 work is done by then and the handler is a map lookup, while a
// 429 sends the agent into its back-off, up to a heartbeat period. After
// a restart with 10,000 agents, 7,000 heartbeats were refused in 10 s.
// Pod status writes have bounded slots and a queue of their own as well
// (podStatusSlots, podStatusQueueWait).
func limitInFlight(limit int, clk clock.Clock) func(http.Handler) http.Handler {
	clk = clock.Or(clk)
	return func(next http.Handler) http.Handler {
		if limit <= 0 {
			return next
		}
		l := &inFlight{
			next:        next,
			clk:         clk,
			slots:       make(chan struct{}, limit),
			beatSlots:   make(chan struct{}, max(limit/4, 1)),
			statusSlots: make(chan struct{}, podStatusSlots(limit)),
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || isLongRunning(r) {
				// A long-running request holds no slot; the limited
				// path's frame is not under it either (an agent's
				// shared watch stream lasts its whole connection).
				next.ServeHTTP(w, r)
				return
			}
			l.serve(w, r)
		})
	}
}

// inFlight is limitInFlight's state.
type inFlight struct {
	next                          http.Handler
	clk                           clock.Clock
	slots, beatSlots, statusSlots chan struct{}
	statusWaiting                 atomic.Int64 // status writes holding or waiting for a slot
}

//go:noinline
func (l *inFlight) serve(w http.ResponseWriter, r *http.Request) {
	slots, wait := l.slots, time.Duration(0)
	switch {
	case isHeartbeat(r):
		slots, wait = l.beatSlots, beatQueueWait
	case isPodStatusWrite(r):
		slots, wait = l.statusSlots, podStatusQueueWait
		// The queue is bounded too: past it a write is refused
		// at once rather than held, whoever sent it.
		if l.statusWaiting.Add(1) > podStatusMaxWaiting {
			wait = 0
		}
		defer l.statusWaiting.Add(-1)
	}
	if !acquireSlot(r.Context(), slots, wait, l.clk) {
		w.Header().Set("Retry-After", strconv.Itoa(inFlightRetryAfter))
		refuseUnreadBody(w, r)
		writeStatus(w, api.NewStatusError(http.StatusTooManyRequests, api.StatusReasonTooManyRequests,
			"too many requests in flight; retry after %d second(s)", inFlightRetryAfter))
		return
	}
	defer func() { <-slots }()
	l.next.ServeHTTP(w, r)
}

// refuseUnreadBody makes a refusal of an HTTP/1.x request whose body has
// not been read close the connection after the answer, without waiting
// for that body. Without it, net/http reads the rest of the body (up to
// 256 KiB) before it writes the answer and again when the request ends.
// A refusal for want of a slot comes before limitBodyRead's deadline, so
// a client that declared a body and never sent it held its connection and
// a goroutine, unanswered, for as long as it liked; an unauthenticated one
// held them for the body deadline (a minute). The read deadline ends those
// reads at once. The refusals that call it: no slot (limitInFlight), no
// valid token, too many attempts (authentication, join). Over HTTP/2 the
// unread body costs nothing (the stream is reset), and a "Connection:
// close" there would end every stream of the connection, so it is left
// alone. A server request without a body has ContentLength 0; a chunked
// one has -1.
func refuseUnreadBody(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 1 || r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	// An error means the connection is gone: nothing left to wait for.
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// beatQueueWait is how long a heartbeat waits for a slot: half of a
// sync's bound on the agent (its heartbeat, 5 s at least).
const beatQueueWait = 5 * time.Second

// Pod status writes (PUT or PATCH of pods/{name}/status: the agents'
// reports of their pods) have slots of their own too, sixteen a core up
// to a quarter of the limit, and wait for one up to podStatusQueueWait
// (well inside the agent's 30 s request timeout) before their 429.
//
// They come in floods: every pod a placement binds is reported Running
// moments after it reaches its agent. Unbounded, the reports of the pods
// bound so far took most of the server's CPU while the scheduler and the
// store's writer, one goroutine each, waited for a core behind them: with
// 10,000 agents a 10,000-replica Deployment was bound in 30.5–36.2 s.
// With 32 slots it was bound in 16.1–17.7 s, and every pod was reported
// Running about as soon (38–46 s against 37–43 s). Fewer slots bound it
// a little faster and reported much later (8: 15.8 s and 52.6 s); 64 bound
// it in 22.6 s (docs/benchmarks.md, "Fleet, round twenty"). Kubernetes'
// priority and fairness does the same with its levels: the kubelets'
// writes share a bounded part of the server, apart from the scheduler's.
const podStatusQueueWait = 20 * time.Second

// podStatusMaxWaiting bounds the status writes served or waiting for a
// slot: a request is classed by its path before it is authenticated, so
// the queue must not grow with whatever a client sends. It holds one
// report from each of 8,192 agents at once.
var podStatusMaxWaiting int64 = 8192

// podStatusSlots is how many pod status writes are served at once under
// an in-flight limit of limit.
func podStatusSlots(limit int) int { return max(min(cpuSlots(), limit/4), 1) }

// isPodStatusWrite reports a PUT or PATCH of
// /api/v1/namespaces/{ns}/pods/{name}/status.
func isPodStatusWrite(r *http.Request) bool {
	if r.Method != http.MethodPut && r.Method != http.MethodPatch {
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/")
	if !ok {
		return false
	}
	ns, rest, _ := strings.Cut(rest, "/")
	rest, ok = strings.CutPrefix(rest, "pods/")
	if !ok || ns == "" {
		return false
	}
	name, sub, _ := strings.Cut(rest, "/")
	return name != "" && sub == "status"
}

// acquireSlot takes one of slots, waiting up to wait (not at all when
// wait is 0) or until ctx ends.
func acquireSlot(ctx context.Context, slots chan struct{}, wait time.Duration, clk clock.Clock) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	if wait <= 0 {
		return false
	}
	t := clk.NewTimer(wait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return true
	case <-t.C():
		return false
	case <-ctx.Done():
		return false
	}
}

// connLimitListener closes new connections from an address that already
// has max open ones. A closed connection frees its slot. Loopback is not
// limited (unless exemptLoopback is false): it is this machine's own
// processes (the local agent, the CLI, load tests simulating a fleet).
type connLimitListener struct {
	net.Listener
	max            int
	exemptLoopback bool

	mu    sync.Mutex
	conns map[string]int // open connections by remote IP
}

// limitConnsPerClient wraps ln; max <= 0 means no limit.
func limitConnsPerClient(ln net.Listener, max int, exemptLoopback bool) net.Listener {
	if max <= 0 {
		return ln
	}
	return &connLimitListener{Listener: ln, max: max, exemptLoopback: exemptLoopback, conns: make(map[string]int)}
}

// Accept returns the next connection within its address's limit; it
// closes the ones beyond it without a word, as a full backlog would.
func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.exemptLoopback {
			if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok && ta.IP.IsLoopback() {
				return c, nil
			}
		}
		ip := remoteIP(c.RemoteAddr())
		l.mu.Lock()
		over := l.conns[ip] >= l.max
		if !over {
			l.conns[ip]++
		}
		l.mu.Unlock()
		if over {
			c.Close() // refused; a failed close leaves nothing to do
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *connLimitListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[ip]--; l.conns[ip] <= 0 {
		delete(l.conns, ip)
	}
}

func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// limitedConn releases its slot once, on the first Close.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
