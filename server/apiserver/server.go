package apiserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/events"
	"github.com/skiffhq/skiff/server/servicealloc"
	"github.com/skiffhq/skiff/storage"
)

// Config holds what a Server needs. Store is required; the rest default.
type Config struct {
	Store  *storage.Store
	Clock  clock.Clock
	Logger *slog.Logger
	// WatchHeartbeat is how often an idle watch stream gets a keep-alive
	// newline (and a BOOKMARK when the client allows them). Default 10s.
	WatchHeartbeat time.Duration
	// Authorize, when set, is asked about every resource request after its
	// URL is parsed and before anything else happens; see AuthorizeFunc.
	// Nil allows everything (the caller authenticates and authorizes
	// elsewhere, or not at all, as in tests).
	Authorize AuthorizeFunc
	// Admit, when set, is asked about every create, update and patch once
	// the object to store is final (decoded, patched, defaulted and
	// valid), just before it is written; see AdmitFunc. Nil admits all.
	Admit AdmitFunc
	// Subresources are extra subresources with their own handlers.
	Subresources []ExtraSubresource
	// Virtual are resources served elsewhere, listed in discovery.
	Virtual []VirtualResource
	// Liveness receives every node heartbeat; nil makes a private one.
	Liveness *Liveness
	// HeartbeatSnapshot is how stale a node's stored lastHeartbeatTime may
	// get before a heartbeat-only status write is persisted. Default 5m.
	HeartbeatSnapshot time.Duration
	// Events stores POSTed events, folding repeats; nil makes one over
	// Store with the default TTL.
	Events *events.Sink
	// Logs serves GET .../pods/{name}/log for a pod that exists (it
	// proxies to the pod's agent); nil answers 503.
	Logs LogsFunc
	// Services hands out cluster IPs and node ports; nil makes one with
	// the default service CIDR and node port range. Bootstrap loads it
	// from the stored Services.
	Services *servicealloc.Allocator
	// APIEndpoint is the address and port the `kubernetes` Service in
	// default points at (the server itself); invalid skips its endpoints.
	APIEndpoint netip.AddrPort
	// ClusterDNS, when set, is the cluster IP Bootstrap gives the
	// kube-system/kube-dns Service (the agents answer DNS there).
	ClusterDNS string
	// Streams serves pods' exec, attach and portforward subresources
	// (through the pod's agent's tunnel); nil answers 503.
	Streams StreamFunc
	// Feeds are the streams other than watches a shared stream
	// (WatchesPath) may carry, by path: the peer feed.
	Feeds map[string]Feed
}

// LogsFunc streams the log of a container of pod to w; container is the
// query's, checked against the pod (defaulted when it has one container).
type LogsFunc func(w http.ResponseWriter, r *http.Request, pod *api.Pod, container string)

// Validate reports a Config that cannot work.
func (c *Config) Validate() error {
	if c.Store == nil {
		return errors.New("apiserver: config needs a store")
	}
	return nil
}

// Server answers the REST API. Create it with New; it is safe for
// concurrent use by any number of requests.
type Server struct {
	store     *storage.Store
	clock     clock.Clock
	log       *slog.Logger
	heartbeat time.Duration
	resources []api.ResourceInfo
	authz     AuthorizeFunc
	admit     AdmitFunc
	extraSubs []ExtraSubresource
	subNames  map[*api.ResourceInfo][]string // of each of resources, what subresourcesOf lists

	liveness          *Liveness
	heartbeatSnapshot time.Duration
	events            *events.Sink
	discovery         *discovery
	openapi           *openAPI
	logs              LogsFunc
	services          *servicealloc.Allocator
	apiEndpoint       netip.AddrPort
	clusterDNS        string
	streams           StreamFunc
	feeds             map[string]Feed

	// keepAlives counts watch heartbeats written and skipped (their
	// connection was busy): WatchKeepAlives.
	keepAlives, keepAlivesSkipped atomic.Uint64
	// watchStreams counts the open watch streams: single (a GET with
	// watch) and shared (WatchesPath); watches the watches they carry.
	singleStreams, sharedStreams, watches atomic.Int64
	// streamEnds and watchErrors count why shared streams and their
	// watches ended: WatchStreamEnds.
	streamEnds  [numStreamEnds]atomic.Uint64
	watchErrors [numWatchErrors]atomic.Uint64

	// evictionMu serializes evictions (budget check, then delete).
	evictionMu sync.Mutex
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		store:     cfg.Store,
		clock:     clock.Or(cfg.Clock),
		log:       cfg.Logger,
		heartbeat: cfg.WatchHeartbeat,
		resources: api.Resources(),
		authz:     cfg.Authorize,
		admit:     cfg.Admit,
		extraSubs: cfg.Subresources,
		logs:      cfg.Logs,
		services:  cfg.Services,

		apiEndpoint: cfg.APIEndpoint,
		clusterDNS:  cfg.ClusterDNS,
		streams:     cfg.Streams,
		feeds:       cfg.Feeds,

		liveness:          cfg.Liveness,
		heartbeatSnapshot: cfg.HeartbeatSnapshot,
	}
	if s.events = cfg.Events; s.events == nil {
		s.events = events.NewSink(cfg.Store, s.clock, 0, s.log)
	}
	if s.services == nil {
		a, err := servicealloc.New(servicealloc.Config{})
		if err != nil {
			return nil, fmt.Errorf("apiserver: service allocator: %w", err)
		}
		s.services = a
	}
	if s.liveness == nil {
		s.liveness = NewLiveness()
	}
	if s.heartbeatSnapshot <= 0 {
		s.heartbeatSnapshot = defaultHeartbeatSnapshot
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	d, err := newDiscovery(s.resources, s.extraSubs, cfg.Virtual)
	if err != nil {
		return nil, fmt.Errorf("apiserver: render discovery: %w", err)
	}
	s.discovery = d
	s.subNames = make(map[*api.ResourceInfo][]string, len(s.resources))
	for i := range s.resources {
		res := &s.resources[i]
		for _, sub := range subresourcesOf(res, s.extraSubs) {
			s.subNames[res] = append(s.subNames[res], sub.name)
		}
	}
	s.openapi = newOpenAPI(s.resources)
	if s.heartbeat <= 0 {
		s.heartbeat = defaultHeartbeat
	}
	return s, nil
}

// Liveness returns the in-memory record of node heartbeats.
func (s *Server) Liveness() *Liveness { return s.liveness }

// Subresources ServeResource answers (see subresourcesOf for which kind
// has which).
const (
	subStatus   = "status"
	subLog      = "log"
	subScale    = "scale"
	subEviction = "eviction"
)

// route is a parsed resource URL.
type route struct {
	res       *api.ResourceInfo
	namespace string
	name      string
	sub       string // "" or one of the sub… constants
	watch     bool   // the legacy /watch/ prefix
}

// parseRoute parses the part of a URL after /api/v1/ or /apis/G/V/.
func (s *Server) parseRoute(group, version string, segs []string) (route, error) {
	var rt route
	notFound := api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "the server could not find the requested resource")
	if version != "v1" {
		return rt, notFound
	}
	if len(segs) > 0 && segs[0] == "watch" {
		rt.watch = true
		segs = segs[1:]
	}
	if len(segs) >= 3 && segs[0] == "namespaces" && segs[2] != "status" && segs[2] != "finalize" {
		rt.namespace = segs[1]
		segs = segs[2:]
		if rt.namespace == "" {
			return rt, notFound
		}
	}
	if len(segs) == 0 || len(segs) > 3 {
		return rt, notFound
	}
	for i := range s.resources {
		if r := &s.resources[i]; r.Group == group && r.Resource == segs[0] {
			rt.res = r
		}
	}
	if rt.res == nil {
		return rt, notFound
	}
	if rt.namespace != "" && !rt.res.Namespaced {
		return rt, notFound
	}
	if len(segs) > 1 {
		rt.name = segs[1]
		if rt.name == "" {
			return rt, notFound
		}
	}
	if len(segs) > 2 {
		rt.sub = segs[2]
		if !slices.Contains(s.subNames[rt.res], rt.sub) || rt.watch {
			return rt, notFound
		}
	}
	if rt.res.Namespaced && rt.namespace == "" && rt.name != "" {
		return rt, notFound
	}
	return rt, nil
}

// ServeResource handles every /api/v1/... and /apis/{group}/{version}/...
// resource URL.
//
// It also answers discovery (/api, /apis, /api/v1, /apis/{group} and
// /apis/{group}/{version}): kubectl needs no other paths to find its way.
func (s *Server) ServeResource(w http.ResponseWriter, r *http.Request) {
	if p := strings.TrimSuffix(r.URL.Path, "/"); isDiscoveryPath(p) {
		s.serveDiscovery(w, r, p)
		return
	}
	group, version, rest, ok := splitAPIPath(r.URL.Path)
	if !ok {
		writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "the server could not find the requested resource"))
		return
	}
	rt, err := s.parseRoute(group, version, rest)
	if err != nil {
		s.writeError(w, r, err, nil, "")
		return
	}
	if !s.authorize(w, r, rt) {
		return
	}
	if r.Method != http.MethodGet && r.URL.Query().Has("dryRun") {
		if err := checkDryRun(r.URL.Query()["dryRun"]); err != nil {
			writeStatus(w, err)
			return
		}
		// Scale writes go through applyUpdate and eviction checks
		// isDryRun itself: both honour it.
	}
	if e := s.extraSubresource(rt.res.Resource, rt.sub); e != nil && rt.sub != "" {
		e.Serve(w, r, attributes(r, rt))
		return
	}
	switch rt.sub {
	case subScale:
		s.serveScale(w, r, rt)
		return
	case subEviction:
		s.serveEviction(w, r, rt)
		return
	case subExec, subAttach, subPortForward:
		s.serveStream(w, r, rt)
		return
	case subEphemeralContainers:
		s.serveEphemeralContainers(w, r, rt)
		return
	}
	switch r.Method {
	case http.MethodGet:
		switch {
		case rt.sub == "log":
			s.serveLogs(w, r, rt)
		case rt.name == "" && (rt.watch || isTrue(r.URL.Query().Get("watch"))):
			s.watch(w, r, rt)
		case rt.name == "":
			s.list(w, r, rt)
		default:
			s.get(w, r, rt)
		}
	case http.MethodPost:
		if rt.name != "" || (rt.res.Namespaced && rt.namespace == "") {
			s.methodNotAllowed(w, r)
			return
		}
		s.create(w, r, rt)
	case http.MethodPut:
		if rt.name == "" || rt.sub == "log" {
			s.methodNotAllowed(w, r)
			return
		}
		s.update(w, r, rt)
	case http.MethodPatch:
		if rt.name == "" || rt.sub == "log" {
			s.methodNotAllowed(w, r)
			return
		}
		s.patch(w, r, rt)
	case http.MethodDelete:
		if rt.name == "" || rt.sub != "" {
			s.methodNotAllowed(w, r)
			return
		}
		s.delete(w, r, rt)
	default:
		s.methodNotAllowed(w, r)
	}
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	writeStatus(w, api.NewStatusError(http.StatusMethodNotAllowed, api.StatusReasonMethodNotAllowed,
		"the server does not allow this method on the requested resource"))
}

// splitAPIPath splits "/api/v1/a/b" into ("", "v1", [a b]) and
// "/apis/apps/v1/a" into ("apps", "v1", [a]).
func splitAPIPath(p string) (group, version string, rest []string, ok bool) {
	p = strings.TrimSuffix(p, "/")
	switch {
	case strings.HasPrefix(p, "/api/"):
		segs := strings.Split(p[len("/api/"):], "/")
		return "", segs[0], segs[1:], true
	case strings.HasPrefix(p, "/apis/"):
		segs := strings.Split(p[len("/apis/"):], "/")
		if len(segs) < 2 {
			return "", "", nil, false
		}
		return segs[0], segs[1], segs[2:], true
	}
	return "", "", nil, false
}

func isTrue(s string) bool { return s == "true" || s == "1" }
