package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/peerfeed"
	"github.com/skiffhq/skiff/internal/tunnel"
	"github.com/skiffhq/skiff/internal/version"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/web"
)

// routes returns the server's HTTP handler: the unauthenticated health,
// version, CA and join endpoints and the dashboard's static files, then everything under /api and /apis
// behind bearer authentication, with request logging and panic recovery
// around all of it.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.recoverPanics, limitInFlight(s.cfg.MaxRequestsInFlight, s.clk), limitBodyRead(s.cfg.BodyReadTimeout), s.nodeReports)
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "the server could not find the requested resource"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, api.NewStatusError(http.StatusMethodNotAllowed, api.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource"))
	})

	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") })
	r.Get("/readyz", s.readyz)
	r.Get("/version", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, version.Get()) })
	r.Get("/cacerts", s.cacerts)
	r.Post("/api/v1/join", s.join)
	// The dashboard's static page and assets are public: they hold no
	// data. Every API call the page makes carries the admin token.
	dashboard := web.Handler()
	r.Handle("/", dashboard)
	r.Handle("/index.html", dashboard)
	r.Handle(web.AssetPrefix+"*", dashboard)

	r.Group(func(r chi.Router) {
		r.Use(s.authenticate)
		r.Route("/api/v1/skiff/tokens", func(r chi.Router) {
			r.Use(requireAdmin)
			r.Get("/", s.listTokens)
			r.Post("/", s.createToken)
			r.Delete("/{id}", s.deleteToken)
		})
		// /metrics is for the admin and for roles granting the
		// nonResourceURL /metrics.
		r.With(s.requireNonResource("get")).Get("/metrics", s.metrics.serveHTTP)
		// The self reviews: any authenticated identity may ask about
		// itself (system:basic-user).
		r.Post(selfSubjectAccessReviewPath, s.serveSelfSubjectAccessReview)
		r.Post(selfSubjectReviewPath, s.serveSelfSubjectReview)
		r.Post(selfSubjectRulesReviewPath, s.serveSelfSubjectRulesReview)
		r.With(requireAdminFor("read node usage")).Get("/api/v1/skiff/nodes/{name}/usage", s.nodeUsage)
		// POST HeartbeatPath and StatsPath are served before routing
		// (nodeReports).
		r.With(requireAdminFor("read a node agent's metrics")).Get(NodeMetricsProxyPath, s.proxyNodeMetrics)
		s.metricsRoutes(r)
		r.Get(tunnel.Path, s.serveTunnel)
		r.Post(tunnel.Path, s.serveTunnel)
		r.Post(tunnel.Path+"/{id}", s.serveTunnelExchange)
		r.Get(peerfeed.Path, s.servePeers)
		r.Get(apiserver.WatchesPath, s.api.ServeWatches)
		r.With(requireAdminFor("back up the store")).Get(backupPath, s.backup)
		// Discovery (/api, /apis and below) and OpenAPI are for any
		// authenticated identity, as Kubernetes' system:discovery role.
		r.Handle("/api", http.HandlerFunc(s.api.ServeResource))
		r.Handle("/apis", http.HandlerFunc(s.api.ServeResource))
		r.Handle("/api/*", http.HandlerFunc(s.api.ServeResource))
		r.Handle("/apis/*", http.HandlerFunc(s.api.ServeResource))
		r.Handle("/openapi/v3", http.HandlerFunc(s.api.ServeOpenAPI))
		r.Handle("/openapi/v3/*", http.HandlerFunc(s.api.ServeOpenAPI))
	})
	return s.logRequests(r)
}

// servePeers streams the peer feed to whoever may watch Nodes: the
// admin, every node (as it may list them) and users whose roles grant
// it.
func (s *server) servePeers(w http.ResponseWriter, r *http.Request) {
	if err := s.authorizeResource(r, apiserver.Attributes{Verb: "watch", Resource: "nodes"}); err != nil {
		writeStatus(w, asStatus(err))
		return
	}
	s.peers.ServeHTTP(w, r)
}

// peerFeed carries the peer feed on an agent's shared stream
// (apiserver.WatchesPath), for whoever may watch Nodes, as servePeers.
type peerFeed struct{ s *server }

// StartFeed implements apiserver.Feed.
func (p peerFeed) StartFeed(r *http.Request, q url.Values) (apiserver.FeedReader, error) {
	if err := p.s.authorizeResource(r, apiserver.Attributes{Verb: "watch", Resource: "nodes"}); err != nil {
		return nil, err
	}
	since := int64(-1)
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, api.NewBadRequest("%s: since: %q is not a revision", peerfeed.Path, v)
		}
		since = n
	}
	return p.s.peers.NewReader(since, q.Get("hash")), nil
}

// readyz answers 200 once the store is open and bootstrapped, and 503
// before that and while shutting down.
func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "not ready"))
		return
	}
	writeText(w, http.StatusOK, "ok")
}

// cacerts serves tls/ca.crt byte for byte, for agents to check against
// their join token's hash.
func (s *server) cacerts(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.WriteHeader(http.StatusOK)
	w.Write(s.ca.CertPEM)
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	w.Write([]byte(text + "\n"))
}

// requestInfo is what the request log learns from inner handlers.
type requestInfo struct {
	id            auth.Identity // authentication's, once authenticated
	authenticated bool
	attrs         apiserver.Attributes // a resource request's, once authorization saw it
}

// who names the identity for the log and the audit.
func (ri *requestInfo) who() string {
	if !ri.authenticated {
		return "anonymous"
	}
	return ri.id.String()
}

// nodeStatusWrite reports whether the request is a node's update or
// patch of a status, which the authorizer only lets through for its own
// Node and its own pods.
func (ri *requestInfo) nodeStatusWrite() bool {
	a := &ri.attrs
	return ri.authenticated && ri.id.Node != "" && a.Subresource == "status" && a.APIGroup == "" &&
		(a.Resource == "pods" || a.Resource == "nodes") && (a.Verb == apiserver.VerbUpdate || a.Verb == apiserver.VerbPatch)
}

type requestInfoKey struct{}

func requestInfoFrom(ctx context.Context) *requestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	return ri
}

// requestState is what the server keeps for one request, in one
// allocation: the context its handlers see, which carries the
// requestInfo and chi's routing context itself, the request log's
// requestInfo and status recorder. Authentication records the identity
// in it too. Each context.WithValue and Request.WithContext it replaces
// was an allocation on every one of a fleet's thousands of heartbeats
// and reports a second (four Request copies a request, 18 % of the
// steady server's allocation at 10 000 agents).
type requestState struct {
	context.Context
	info  requestInfo
	rec   statusRecorder
	route chi.Context // the routing context, when Routes is set (the mux served)

	start          time.Time
	resource, verb string // requestLabels
	watch          bool   // counted in the watch gauge
}

// Value answers the request's own keys and asks the parent for the
// rest (so contexts derived from it find the request's cancellation).
func (st *requestState) Value(key any) any {
	switch key {
	case requestInfoKey{}:
		return &st.info
	case chi.RouteCtxKey:
		if st.route.Routes != nil {
			return &st.route
		}
	}
	return st.Context.Value(key)
}

// logRequests logs one line per request: method, path (no query, which
// may carry selectors but never secrets, and no headers), code, duration
// and the identity authentication found. Probes, heartbeats, usage
// reports and a node's writes of its own statuses that succeed log at
// debug level: a fleet's (a heartbeat a second per ten agents, a report
// per fifteen, a pod status for every pod placed, 10,000 lines in a
// placement) would otherwise fill the log and serialise on its writer.
// The audit log keeps every write. When next is the chi router, the
// request's routing context is made here, with the rest of its state.
func (s *server) logRequests(next http.Handler) http.Handler {
	mux, _ := next.(*chi.Mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The work before and after is in methods of their own: this
		// frame stays under every handler for as long as it runs, an
		// agent's shared watch stream for as long as the agent is
		// connected.
		st := s.beginRequest(w, r, mux)
		if st.watch {
			defer s.metrics.watchEnded()
		}
		next.ServeHTTP(&st.rec, r.WithContext(st))
		s.endRequest(st, r)
	})
}

//go:noinline
func (s *server) beginRequest(w http.ResponseWriter, r *http.Request, mux *chi.Mux) *requestState {
	st := &requestState{Context: r.Context(), rec: statusRecorder{ResponseWriter: w}, start: time.Now()}
	if mux != nil {
		st.route.Routes = mux
	}
	st.resource, st.verb = requestLabels(r)
	if st.verb == "watch" {
		st.watch = true
		s.metrics.watchStarted()
	}
	return st
}

//go:noinline
func (s *server) endRequest(st *requestState, r *http.Request) {
	if !st.watch && st.info.authenticated && st.info.id.Node != "" {
		// An agent heard from its connection: its watch streams
		// need no keep-alive for a while. Only an agent's: the
		// dashboard and kubectl keep their keep-alives, whatever
		// else their connection carries (the dashboard takes a
		// watch silent for 35 s for dead).
		apiserver.NoteAnswered(r.Context())
	}
	code := st.rec.code
	if code == 0 {
		code = http.StatusOK
	}
	level := slog.LevelInfo
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || code < 300 && (isNodeReport(r) || st.info.nodeStatusWrite()) {
		level = slog.LevelDebug
	}
	s.metrics.observe(st.resource, st.verb, code, time.Since(st.start))
	s.audit(r, &st.info, code, time.Now())
	if !s.log.Enabled(r.Context(), level) {
		return
	}
	s.log.LogAttrs(r.Context(), level, "request",
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("code", code),
		slog.Duration("duration", time.Since(st.start)),
		slog.String("identity", st.info.who()),
		slog.String("remote", clientIP(r)))
}

// recoverPanics turns a handler panic into a logged 500 Status.
// http.ErrAbortHandler is passed on: it is how a handler aborts a
// response on purpose.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			s.log.LogAttrs(r.Context(), slog.LevelError, "handler panic",
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			if rec, ok := w.(*statusRecorder); ok && rec.code != 0 {
				return // too late for a Status; the client sees a cut-off body
			}
			writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "internal error"))
		}()
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the response code. It keeps streaming working:
// Flush passes through, and Unwrap lets http.ResponseController reach the
// connection for per-write deadlines.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Flush implements http.Flusher.
func (s *statusRecorder) Flush() {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap returns the wrapped writer for http.ResponseController.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// nodeReports serves the agents' periodic calls (isNodeReport: the
// heartbeat and the usage report) behind the same limits as every
// request, authenticated, without the router: half of a fleet's
// requests are these, and routing one cost a tree walk, a path value
// (a map) and the route's pattern (a string) for a handler known from
// the path. Any other method goes on to the router (and is 404, as
// before).
func (s *server) nodeReports(next http.Handler) http.Handler {
	beat := s.authenticate(http.HandlerFunc(s.heartbeat))
	stats := s.authenticate(http.HandlerFunc(s.postStats))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case isNodeCall(r, "/heartbeat"):
			beat.ServeHTTP(w, r)
		case isNodeCall(r, "/stats"):
			stats.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// nodeCallName is the node a node call names
// (/api/v1/skiff/nodes/{name}/...).
func nodeCallName(r *http.Request) string {
	rest, _ := strings.CutPrefix(r.URL.Path, "/api/v1/skiff/nodes/")
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// isHeartbeat reports the lightweight heartbeat call (HeartbeatPath).
func isHeartbeat(r *http.Request) bool { return isNodeCall(r, "/heartbeat") }

// isNodeReport reports an agent's periodic call that changes no stored
// object: the lightweight heartbeat (every 10 s) or the usage report
// (StatsPath, every 15 s). A fleet's are thousands a second, so their
// successes are neither audited nor logged above debug.
func isNodeReport(r *http.Request) bool {
	return isNodeCall(r, "/heartbeat") || isNodeCall(r, "/stats")
}

// isNodeCall reports a POST to /api/v1/skiff/nodes/{name}<suffix>.
func isNodeCall(r *http.Request, suffix string) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/skiff/nodes/")
	return ok && r.Method == http.MethodPost && strings.HasSuffix(rest, suffix) && strings.Count(rest, "/") == 1 && rest[0] != '/'
}
