package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/peerfeed"
	"github.com/skiffhq/skiff/internal/promtext"
	"github.com/skiffhq/skiff/internal/supervise"
	"github.com/skiffhq/skiff/internal/tunnel"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/server/controllers"
	"github.com/skiffhq/skiff/server/events"
	"github.com/skiffhq/skiff/server/peers"
	"github.com/skiffhq/skiff/server/scheduler"
	"github.com/skiffhq/skiff/server/servicealloc"
	"github.com/skiffhq/skiff/server/tlsutil"
	"github.com/skiffhq/skiff/server/usage"
	"github.com/skiffhq/skiff/storage"
)

// HTTP server timeouts. There is deliberately no WriteTimeout: watch
// streams stay open, and the apiserver sets a deadline per write instead.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
	// shutdownGrace is how long requests in flight may finish on their
	// own before their contexts are cancelled, which ends watch streams
	// (they never finish on their own).
	shutdownGrace = time.Second
	// eventExpiryInterval is how often expired events (and join tokens)
	// are deleted, and the garbage collector rescans everything.
	eventExpiryInterval = time.Minute
)

// server is one running control plane: what Run builds and serves.
type server struct {
	cfg         Config
	log         *slog.Logger
	clk         clock.Clock
	store       *storage.Store
	api         *apiserver.Server
	tokens      *auth.Tokens
	auditLog    *auditLog // nil when off
	rbac        *rbacCache
	saTokens    *auth.ServiceAccountTokens
	ca          *tlsutil.CA
	cert        *tlsutil.ServerCert
	joinLimiter *auth.Limiter
	authLimiter *auth.Limiter
	events      *events.Sink
	liveness    *apiserver.Liveness
	nodeIdx     *nodeIndex // heartbeats' Node lookups (hotpath.go)
	hot         *hotPath   // the store's hook feeding tokens and nodeIdx
	metrics     *serverMetrics
	// parts are the leader's loops of the current (or next) term.
	partsMu sync.Mutex
	parts   leaderParts
	usage   *usage.Recorder
	// loops supervises the background loops; a leader's term reports
	// its fatal errors to it.
	loops    *supervise.Group
	measured *usage.Measured // agents' usage reports, in memory
	// tunnels holds the agents' tunnels; tunnelRT sends requests
	// through them.
	tunnels  *tunnel.Registry
	tunnelRT *http.Transport
	// peers serves the agents' pod networks every Node's Peer.
	peers *peers.Feed
	// adminToken is held from setup until the client configs are
	// written, then dropped.
	adminToken string
	// ready is set once setup is done, and cleared when shutdown starts.
	ready atomic.Bool
	// gov raises the collector's GOGC while the store writes in bulk;
	// nil when Config.GCBurst is off.
	gov *gcGovernor
}

// hpackEncoderTableSize bounds the HPACK table the server compresses its
// response headers with. 1 byte holds no entry, so nothing is indexed:
// the table (with its two maps) was, with the decoder's, the largest
// single item of the heap of a server with thousands of agents (≈ 2.5 KiB
// a connection each), and what it saved was small (an agent's responses
// carry a Date that changes every second and a Content-Type: about 15
// bytes a response).
//
// The decoder's table keeps HTTP/2's default of 4 KiB. A smaller one is
// applied by net/http from the connection's start, before the client has
// read the SETTINGS that announce it, so a client whose first requests
// leave at once (an agent starting its watches over a slow link) fills
// the default 4 KiB, refers to entries the server dropped, and the server
// ends the connection with COMPRESSION_ERROR (TestHPACKBeforeSettings).
// api/client bounds its own encoder's table instead
// (client.hpackEncoderTableSize), which every request honours from the
// first.
const hpackEncoderTableSize = 1

// maxReadFrameSize is the largest HTTP/2 frame the server reads (its
// SETTINGS_MAX_FRAME_SIZE): HTTP/2's least, 16 KiB, where net/http's
// default is 1 MiB. A Go client writes a request body of unknown length
// (an agent's side of a tunnel exchange: logs, exec, port-forward)
// through a buffer as large as the frames its server takes, up to
// 512 KiB, for the exchange's life: a simulator of 10,000 agents, each
// streaming one body, grew to 23 GB and was killed; with 16 KiB frames
// 2,000 took 6 % more memory than without the bodies. The reader of each
// connection keeps a buffer as large as the largest frame it read, too:
// 300 connections, each sending one 512 KiB body before it was refused
// 401, grew the server by 33.6 MB with 1 MiB frames and 29.3 MB with
// 16 KiB (docs/benchmarks.md, round thirty-seven).
const maxReadFrameSize = 16 << 10

// usagePause spreads the usage recorder's once-a-minute scan of every
// node and pod (usage.Config.Pause): 20 ms after each 256 objects, about
// 5 ms of a core, keeps it under a third of a core. Taken at once with
// 10,000 nodes, it made the heartbeats of its second slow.
const usagePause = 20 * time.Millisecond

// Run starts the control plane described by cfg and serves until ctx
// ends, then shuts down gracefully: it stops accepting connections, lets
// requests in flight finish (ending watch streams), waits at most
// cfg.ShutdownTimeout, closes the store and returns nil. It returns an
// error when setup or serving fails; whatever it opened is closed again.
//
// On the first start it creates, under <data-dir>/server/: the TLS CA and
// serving certificate (tls/), the store (state.db), admin.token and
// join.token; on every start it (re)writes skiff.yaml and kubeconfig.yaml
// with the URL it listens on. Later starts reuse everything else.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	s := &server{cfg: cfg, log: cfg.Logger, clk: cfg.Clock}
	if err := s.setup(ctx); err != nil {
		if cerr := s.auditLog.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close audit log: %w", cerr))
		}
		if s.store != nil {
			if cerr := s.store.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("close store: %w", cerr))
			}
		}
		return err
	}
	return s.serve(ctx)
}

// setup prepares everything serve needs, in dependency order.
func (s *server) setup(ctx context.Context) error {
	cfg := s.cfg
	if err := os.MkdirAll(cfg.serverDir(), 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	so, err := storage.ParseDatastore(cfg.Datastore) // checked by Validate
	if err != nil {
		return err
	}
	so.Clock, so.Logger = s.clk, s.log.With("component", "storage")
	// The store, shared by every server, keeps cluster IPs and node ports
	// unique: each server's allocator is only a cache of it.
	so.Claims = map[string]storage.ClaimFunc{"services": servicealloc.Claims}
	if cfg.AuditLog != AuditLogOff {
		if s.auditLog, err = openAuditLog(cfg.AuditLog, cfg.AuditMaxBytes, DefaultAuditMaxBackup, s.clk, s.log); err != nil {
			return err
		}
	}
	// Secrets are sealed under the key file; on PostgreSQL every server
	// must hold the same one (sharedkey.go).
	keys, freshKey, err := loadKeys(cfg.EncryptionKeyFile, so.Postgres != "")
	if err != nil {
		return err
	}
	so.Sealer = keys
	st, err := storage.Open(ctx, so)
	if err != nil {
		return fmt.Errorf("open datastore %s: %w", storage.Redact(cfg.Datastore), err)
	}
	s.store = st
	if err := shareKey(ctx, st, keys, cfg.EncryptionKeyFile, freshKey); err != nil {
		return err
	}
	// The cluster identity shared through the datastore is sealed too.
	blobs := sealedBlobs{st: st, keys: keys}
	if n, err := resealBlobs(ctx, st, keys); err != nil {
		return fmt.Errorf("encrypt the shared cluster secrets: %w", err)
	} else if n > 0 {
		s.log.Info("encrypted shared cluster secrets", "blobs", n)
	}
	s.rbac = &rbacCache{store: st}
	// Secrets stored before encryption was on are sealed now; nothing is
	// written when all are.
	if n, err := st.Reseal(ctx); err != nil {
		return fmt.Errorf("encrypt secrets at rest: %w", err)
	} else if n > 0 {
		s.log.Info("encrypted stored secrets", "values", n)
	}

	// On a shared (PostgreSQL) datastore the first server's CA and admin
	// token become every server's.
	tlsDir := cfg.path(tlsDirName)
	ca, err := shareCA(ctx, blobs, tlsDir, s.clk)
	if err != nil {
		return err
	}
	sans, err := tlsutil.LocalSANs(cfg.TLSSANs)
	if err != nil {
		return err
	}
	cert, err := tlsutil.NewServerCert(tlsDir, ca, sans, s.clk)
	if err != nil {
		return err
	}
	s.ca, s.cert = ca, cert

	s.events = events.NewSink(st, s.clk, s.cfg.EventTTL, s.log.With("component", "events"))
	s.liveness = apiserver.NewLiveness()
	// The server's client certificate for agents' log endpoints: fresh
	// at every start, kept only in memory.
	clientCert, err := ca.IssueClientCert(agentCommonName, s.clk.Now())
	if err != nil {
		return err
	}
	s.tunnels = tunnel.NewRegistry()
	s.tunnelRT = s.tunnels.Transport()
	s.peers = peers.New(peers.Config{Store: st, Clock: s.clk, Logger: s.log.With("component", "peers")})
	proxy := &logProxy{store: st, cert: clientCert, log: s.log.With("component", "logs"), tunnels: s.tunnels, tunnelRT: s.tunnelRT}
	svcAlloc, err := servicealloc.New(servicealloc.Config{ServiceCIDR: cfg.ServiceCIDR, NodePortRange: cfg.NodePortRange})
	if err != nil {
		return err
	}
	s.api, err = apiserver.New(apiserver.Config{
		Store: st, Clock: s.clk, Logger: s.log.With("component", "apiserver"), Authorize: s.authorizeResource, Admit: s.admit,
		Subresources: []apiserver.ExtraSubresource{s.tokenRequestSubresource()},
		Virtual:      reviewResources(),
		Events:       s.events, Liveness: s.liveness, Logs: proxy.serve, Streams: s.serveStream,
		Services: svcAlloc, ClusterDNS: cfg.ClusterDNS,
		Feeds: map[string]apiserver.Feed{peerfeed.Path: peerFeed{s}, tunnel.Path: tunnelFeed{s}},
	})
	if err != nil {
		return err
	}
	if err := s.newScheduler(); err != nil {
		return err
	}
	s.measured = usage.NewMeasured(0)
	s.usage, err = usage.New(usage.Config{Store: st, Clock: s.clk, Logger: s.log.With("component", "usage"), Phase: usage.DefaultInterval / 2, Pause: usagePause, Source: s.usageFromScheduler})
	if err != nil {
		return err
	}
	s.metrics = newServerMetrics(st, s.liveness)
	s.metrics.addScheduler(func() *scheduler.Metrics { return s.leaderParts().sched.Metrics() })
	s.addTunnelMetrics()
	if s.auditLog != nil {
		s.metrics.addWriter(func(w *promtext.Writer) {
			w.Counter("skiff_audit_entries_dropped_total", "Audit entries dropped because the audit log's buffer was full.", "", float64(s.auditLog.Dropped()))
		})
	}
	if err := s.api.Bootstrap(ctx); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}

	adminToken, err := shareAdminToken(ctx, blobs, cfg.path(adminTokenName))
	if err != nil {
		return err
	}
	s.tokens, err = auth.NewTokens(auth.Config{Store: secretStore{st: st, clk: s.clk}, CAHash: ca.Hash(), AdminToken: adminToken, Clock: s.clk,
		Invalidated: true})
	if err != nil {
		return err
	}
	s.nodeIdx = newNodeIndex()
	s.hot = newHotPath(s)
	st.AddChangeHook(s.hot)
	s.addHotPathMetrics()
	// The credentials of every node in one list, before any agent
	// connects: a restarted server otherwise reads and decodes one per
	// node while the whole fleet reconnects. The hook is in place first,
	// so a credential changed during the list is not cached.
	if n, err := s.tokens.Warm(ctx); err != nil {
		s.log.Warn("node credentials not preloaded; each node's first request reads its own", "err", err)
	} else if n > 0 {
		s.log.Info("node credentials preloaded", "nodes", n)
	}
	if n, err := s.hot.preloadNodeIndex(ctx); err != nil {
		s.log.Warn("node index not preloaded; heartbeats read the store until it loads", "err", err)
	} else if n > 0 {
		s.log.Info("node index preloaded", "nodes", n)
	}
	ensureJoin := func(ctx context.Context, path string) error {
		_, err := s.tokens.EnsureDefaultJoinToken(ctx, path)
		return err
	}
	if err := shareJoinToken(ctx, blobs, cfg.path(joinTokenName), ensureJoin); err != nil {
		return err
	}
	saKey, err := shareSigningKey(ctx, blobs, cfg.path(serviceAccountKeyName))
	if err != nil {
		return err
	}
	if s.saTokens, err = auth.NewServiceAccountTokens(saKey, s.clk, s.serviceAccountUID); err != nil {
		return err
	}
	if err := s.ensureDefaultRBAC(ctx); err != nil {
		return err
	}
	if err := s.newControllers(); err != nil {
		return err
	}
	s.metrics.addControllers(func() *controllers.Manager { return s.leaderParts().ctrl })
	s.joinLimiter = auth.NewLimiter(auth.LimiterConfig{Clock: s.clk})
	s.authLimiter = auth.NewLimiter(auth.LimiterConfig{Clock: s.clk})
	s.adminToken = adminToken
	return nil
}

// serve listens, writes the client configs, serves until ctx ends and
// shuts down.
func (s *server) serve(ctx context.Context) error {
	cfg := s.cfg
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return errors.Join(fmt.Errorf("listen: %w", err), s.closeStore())
	}
	listenHost, _, _ := splitListen(cfg.Listen)
	info := Info{
		Addr:             ln.Addr(),
		URL:              clientURL(listenHost, ln.Addr()),
		AdminTokenPath:   cfg.path(adminTokenName),
		JoinTokenPath:    cfg.path(joinTokenName),
		ClientConfigPath: cfg.path(clientConfigName),
		KubeconfigPath:   cfg.path(kubeconfigName),
		CAPath:           filepath.Join(cfg.path(tlsDirName), tlsutil.CACertFile),
	}
	err = writeClientConfigs(info.ClientConfigPath, info.KubeconfigPath, info.URL, s.ca.CertPEM, s.adminToken)
	s.adminToken = ""
	if err == nil {
		err = s.api.PublishAPIEndpoint(ctx, apiEndpoint(listenHost, ln.Addr()))
	}
	if err != nil {
		ln.Close()
		return errors.Join(err, s.closeStore())
	}

	// Requests get a context of their own, cancelled only by shutdown,
	// so that ctx ending starts a graceful stop rather than aborting them.
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	tlsConfig := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: s.cert.GetCertificate,
		// Naming h2 here makes Server.Serve set up HTTP/2 for the
		// handshaken connections handshakeListener hands it.
		NextProtos: []string{"h2", "http/1.1"},
	}
	// Session tickets sealed with keys derived from the CA: a fleet
	// reconnecting to this server after a restart (or to another server
	// of the cluster) resumes its sessions.
	ticketKeys, err := tlsutil.SessionTicketKeys(s.ca, s.clk.Now())
	if err != nil {
		ln.Close()
		return errors.Join(err, s.closeStore())
	}
	tlsConfig.SetSessionTicketKeys(ticketKeys)
	hs := &http.Server{
		Handler: s.routes(),
		// Serve may adjust its TLSConfig; the listener's handshakes
		// use a copy of their own.
		TLSConfig:         tlsConfig.Clone(),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		HTTP2:             &http.HTTP2Config{MaxEncoderHeaderTableSize: hpackEncoderTableSize, MaxReadFrameSize: maxReadFrameSize},
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		// Each connection counts what it was sent, so that its watch
		// streams skip keep-alives the client does not need.
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context { return apiserver.WithConnActivity(ctx) },
	}
	served := make(chan error, 1)
	limited := limitConnsPerClient(ln, cfg.MaxConnsPerClient, !cfg.limitLoopbackConns)
	tlsLn := newHandshakeListener(limited, tlsConfig, readHeaderTimeout, s.log.With("component", "tls"))
	s.metrics.addWriter(func(w *promtext.Writer) {
		sent, skipped := s.api.WatchKeepAlives()
		w.Declare("skiff_watch_keepalives_total", promtext.Counter, "Watch streams' heartbeats (keep-alive newlines and BOOKMARKs): sent, or skipped because the client had heard from its connection since the last.")
		w.Sample("skiff_watch_keepalives_total", `result="sent"`, float64(sent))
		w.Sample("skiff_watch_keepalives_total", `result="skipped"`, float64(skipped))
		single, shared, watches := s.api.WatchStreams()
		w.Declare("skiff_watch_streams", promtext.Gauge, "Open watch streams: single (a GET with watch=true), or shared by several watches (an agent's GET /api/v1/skiff/watches).")
		w.Sample("skiff_watch_streams", `kind="single"`, float64(single))
		w.Sample("skiff_watch_streams", `kind="shared"`, float64(shared))
		w.Gauge("skiff_watches", "Watches open, over every watch stream.", "", float64(watches))
		ends, errs := s.api.WatchStreamEnds()
		w.Declare("skiff_watch_stream_ends_total", promtext.Counter, "Shared watch streams (an agent's GET /api/v1/skiff/watches) ended, by reason: client (it closed the stream), write (a write failed or the stream's write deadline passed: a client that stopped reading), done (every watch on it ended).")
		for _, reason := range apiserver.StreamEndReasons {
			w.Sample("skiff_watch_stream_ends_total", `reason="`+reason+`"`, float64(ends[reason]))
		}
		w.Declare("skiff_watch_errors_total", promtext.Counter, "Watches on shared streams ended with an ERROR event, by reason: too_slow (fell behind), expired (its revision was too old: the client lists again), closed, other.")
		for _, reason := range apiserver.WatchErrorReasons {
			w.Sample("skiff_watch_errors_total", `reason="`+reason+`"`, float64(errs[reason]))
		}
	})
	s.metrics.addWriter(func(w *promtext.Writer) {
		st := tlsLn.Stats()
		w.Declare("skiff_tls_handshakes_total", promtext.Counter, "TLS handshakes on the API port by result: ok, or failed (a bad or silent peer, or the handshake's deadline passed while it waited for a slot).")
		w.Sample("skiff_tls_handshakes_total", `result="ok"`, float64(st.OK))
		w.Sample("skiff_tls_handshakes_total", `result="failed"`, float64(st.Failed))
		w.Counter("skiff_tls_handshakes_resumed_total", "TLS handshakes that resumed a session (counted among the ok too).", "", float64(st.Resumed))
		w.Counter("skiff_tls_handshakes_expired_total", "TLS handshakes that failed because their deadline passed before a slot freed (counted among the failed too).", "", float64(st.Expired))
		w.Counter("skiff_tls_handshakes_abandoned_total", "TLS handshakes that failed because the client closed its connection while the handshake waited for a slot, before any work for it (counted among the failed too).", "", float64(st.Abandoned))
		w.Gauge("skiff_tls_handshakes_waiting", "TLS handshakes waiting for one of the slots (sixteen a core) in which the server computes its part.", "", float64(st.Waiting))
	})
	go func() { served <- hs.Serve(tlsLn) }()

	// Background loops run under a supervisor until shutdown, and end
	// before the store closes; the first that fails stops the server.
	loops, loopCtx := supervise.New(context.WithoutCancel(ctx), s.log)
	s.loops = loops
	loops.Go("usage", s.usage.Run)
	loops.Go("node index", s.hot.runNodeIndex)
	// Every server serves the peer feed, leader or not.
	loops.Go("peer feed", func(ctx context.Context) error {
		s.peers.Run(ctx)
		return ctx.Err()
	})
	s.metrics.addWriter(func(w *promtext.Writer) {
		w.Counter("skiff_peer_feed_full_encodes_total", "Times the peer feed encoded the whole peer set for new streams: at most once a seal interval while nodes change.", "", float64(s.peers.FullEncodes()))
	})
	if cfg.GCBurst.Percent > 0 {
		gov := newGCGovernor(cfg.GCBurst, s.store.Writes, debug.SetGCPercent, debug.FreeOSMemory, s.clk, s.log.With("component", "gc"))
		s.gov = gov // before the campaign: its controllers announce bulk writes to it
		s.metrics.addWriter(func(w *promtext.Writer) {
			w.Gauge("skiff_gc_percent", "The collector's GOGC as the server set it: the steady one, or the higher one while the store writes in bulk.", "", float64(gov.percent.Load()))
			w.Counter("skiff_gc_bursts_total", "Times the store's writes a second reached the burst threshold, or a controller announced as many creates at once, and the collector's GOGC was raised.", "", float64(gov.bursts.Load()))
		})
		loops.Go("gc burst", gov.run)
	}
	loops.Go("session ticket keys", func(ctx context.Context) error {
		rotateTicketKeys(ctx, tlsLn, s.ca, s.clk, s.log.With("component", "tls"))
		return ctx.Err()
	})
	if cfg.DisableControllers {
		s.log.Info("controllers disabled")
	}
	if cfg.DisableScheduler {
		s.log.Info("scheduler disabled (--disable-scheduler)")
	}
	// The scheduler, controllers and node IPAM run on one server at a
	// time: the leader (on SQLite, always this one).
	loops.Go("leader election", s.campaign)
	if s.store.Backend() == "postgres" {
		loops.Go("liveness sync", func(ctx context.Context) error {
			syncLiveness(ctx, s.store, s.liveness, s.clk, livenessSyncInterval, s.log.With("component", "liveness"))
			return ctx.Err()
		})
	}

	s.ready.Store(true)
	s.log.Info("skiff server listening", "addr", ln.Addr().String(), "url", info.URL, "datastore", storage.Redact(cfg.Datastore))
	if cfg.DisableAgent {
		s.log.Info("local agent disabled (--disable-agent)")
	}
	if cfg.Ready != nil {
		cfg.Ready(info)
	}

	var serveErr error
	select {
	case err := <-served:
		serveErr = fmt.Errorf("serve: %w", err)
	case <-loopCtx.Done():
		s.log.Error("a server loop failed; shutting down")
	case <-ctx.Done():
		s.log.Info("shutting down")
	}
	s.ready.Store(false)
	shutdownErr := s.shutdown(hs, cancelRequests)
	loops.Stop()
	loopErr := loops.Wait()
	if serveErr == nil {
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			serveErr = fmt.Errorf("serve: %w", err)
		}
	}
	return errors.Join(serveErr, loopErr, shutdownErr, s.closeStore(), s.auditLog.Close())
}

// shutdown stops hs: no new connections, requests in flight get
// shutdownGrace to finish before their contexts are cancelled, and after
// cfg.ShutdownTimeout the remaining connections are closed. It uses the
// wall clock, as net/http does.
func (s *server) shutdown(hs *http.Server, cancelRequests context.CancelFunc) error {
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	// Tunnels are hijacked connections Shutdown does not see: close
	// them, and the agents dial again (perhaps another server).
	s.tunnels.Close()
	s.tunnelRT.CloseIdleConnections()
	grace := time.AfterFunc(min(shutdownGrace, s.cfg.ShutdownTimeout/2), cancelRequests)
	defer grace.Stop()
	if err := hs.Shutdown(sctx); err != nil {
		s.log.Warn("graceful shutdown timed out; closing connections", "err", err)
		cancelRequests()
		if err := hs.Close(); err != nil {
			return fmt.Errorf("close http server: %w", err)
		}
	}
	return nil
}

// closeStore closes the store, reporting a failure as an error.
func (s *server) closeStore() error {
	if err := s.store.Close(); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}
