package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/skiffhq/skiff/agent/checkpoint"
	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/eviction"
	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/logs"
	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/agent/objects"
	"github.com/skiffhq/skiff/agent/prober"
	"github.com/skiffhq/skiff/agent/runtime/containerd"
	"github.com/skiffhq/skiff/agent/runtime/containerd/daemon"
	"github.com/skiffhq/skiff/agent/status"
	"github.com/skiffhq/skiff/agent/streaming"
	"github.com/skiffhq/skiff/agent/usage"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/footprint"
	"github.com/skiffhq/skiff/internal/supervise"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// Defaults of the agent's settings.
const (
	DefaultContainerd = "/run/containerd/containerd.sock"
	DefaultCgroupRoot = "/skiff"
	DefaultMaxPods    = 110
	DefaultListen     = "0.0.0.0:10250"
	// Namespace is the containerd namespace the agent's containers live in.
	Namespace = "skiff"
)

// ErrNoContainerd is Run's error when there is no containerd to use: no
// socket and no binary to start one. `skiff server` then runs without
// its local agent (a control plane only).
var ErrNoContainerd = errors.New("no containerd")

// Config is one agent's settings (the `skiff agent` flags).
type Config struct {
	Server   string // https://host:port of the server
	Token    string // join token; "" once credentials are kept
	NodeName string
	DataDir  string // agent state goes under <DataDir>/agent
	Labels   map[string]string
	// Containerd is the socket; when it does not exist and a containerd
	// binary is on PATH the agent runs its own under
	// <DataDir>/agent/containerd.
	Containerd     string
	CgroupRoot     string
	SystemReserved api.ResourceList
	MaxPods        int
	// PodMaxPIDs is each pod cgroup's pids.max; 0 means no limit.
	PodMaxPIDs int64
	// Listen is where the agent serves logs to the server (HTTPS).
	Listen string
	// NodeIP, when set, is the node's only InternalIP (what the server
	// dials for logs, the overlay's tunnel endpoint); else every global
	// address of the machine.
	NodeIP string
	// ClusterCIDR is the whole pod network (the server's
	// --cluster-cidr); "" means network.DefaultClusterCIDR.
	ClusterCIDR string
	// ServiceCIDR, ClusterDNS and ClusterDomain are the server's
	// --service-cidr, --cluster-dns and --cluster-domain (defaults
	// DefaultServiceCIDR, DefaultClusterDNS, DefaultClusterDomain). The
	// agent serves the cluster DNS at ClusterDNS through its service
	// proxy.
	ServiceCIDR   string
	ClusterDNS    string
	ClusterDomain string
	// DNSUpstreams are the resolvers the cluster DNS forwards other names
	// to; nil reads the host's /etc/resolv.conf.
	DNSUpstreams []string
	// Network, when set, adjusts the pod network's configuration (tests
	// give each agent its own bridge and nftables table).
	Network func(*network.Config)
	// Eviction is the eviction manager's configuration
	// (eviction.ParseConfig of the --eviction-* flags).
	Eviction eviction.Config
	// UsageInterval is how often measured usage is sent to the server
	// (0: usage.DefaultInterval, 20 s).
	UsageInterval time.Duration
	// NodeStatusInterval is the heartbeat: how often the node's status is
	// sent (0: node.DefaultHeartbeat, 10 s). It must stay well under the
	// server's node monitor grace; the fault suite shortens both.
	NodeStatusInterval time.Duration
	Clock              clock.Clock
	Logger             *slog.Logger
	// Ready, when set, is called once the kubelet runs (before the
	// server may have answered).
	Ready func(*Agent)
	// DialContext, when set, opens the agent's connections to the
	// server (the join, the tunnel and API calls); tests dial from
	// inside a network namespace with it.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Agent is a running agent; Run makes it.
type Agent struct {
	cfg     Config
	dir     string
	log     *slog.Logger
	clk     clock.Clock
	Kubelet *kubelet.Kubelet
	Runtime *containerd.Runtime

	network    *network.Manager
	services   *services
	eviction   *eviction.Manager
	nodeStats  *eviction.NodeStats // the one sampler: eviction and usage reports
	imageFSDir string              // containerd's root, for imagefs signals

	mu        sync.Mutex
	joined    *node.Credentials
	registrar *node.Registrar
	logAddr   net.Addr
	tunnel    *streaming.Client
	usage     *usage.Reporter
}

// Dir is the agent's state directory, <data-dir>/agent.
func (a *Agent) Dir() string { return a.dir }

// LogAddr is the address the log endpoint listens on (nil before Run
// has bound it, which it does first).
func (a *Agent) LogAddr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logAddr
}

// TunnelConnected reports whether the tunnel to the server is open.
func (a *Agent) TunnelConnected() bool {
	a.mu.Lock()
	t := a.tunnel
	a.mu.Unlock()
	return t != nil && t.Connected()
}

// Registered reports whether the Node is registered with the server.
func (a *Agent) Registered() bool {
	a.mu.Lock()
	r := a.registrar
	a.mu.Unlock()
	return r != nil && r.Registered()
}

func (c *Config) setDefaults() error {
	if c.DataDir == "" {
		return errors.New("agent: a data dir is required")
	}
	if c.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("agent: node name: %w", err)
		}
		c.NodeName = h
	}
	if c.Containerd == "" {
		c.Containerd = DefaultContainerd
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = DefaultCgroupRoot
	}
	if c.MaxPods <= 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.NodeIP != "" && net.ParseIP(c.NodeIP) == nil {
		return fmt.Errorf("agent: node IP %q is not an IP address", c.NodeIP)
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = DefaultServiceCIDR
	}
	if c.ClusterDNS == "" {
		c.ClusterDNS = DefaultClusterDNS
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Clock = clock.Or(c.Clock)
	return nil
}

// Run runs the agent until ctx ends: containerd (its own when none
// runs), the kubelet fed by the checkpoint, static pod files and — once
// joined — the server's assignment stream, node registration and
// heartbeats, status reporting, the log endpoint and image side-loading.
// The kubelet starts before the server answers, so pods keep running
// while the server is away.
//
// Every loop runs under one supervisor (internal/supervise): Run returns
// nil once ctx ends and every loop has stopped, or the first fatal error
// — a start-up failure (the log endpoint's port taken, no containerd) or
// a loop that failed — named after its cause, once everything stopped.
// Pods keep running after Run returns, by design.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	a := &Agent{cfg: cfg, dir: filepath.Join(cfg.DataDir, "agent"), log: cfg.Logger, clk: cfg.Clock}
	g, ctx := supervise.New(ctx, a.log)
	var cl closers
	if err := a.start(ctx, g, &cl); err != nil {
		g.Fail(err)
	}
	err := g.Wait()
	// What the loops used closes once they all stopped, last opened first.
	if cerr := cl.close(); cerr != nil {
		a.log.Warn("agent: close", "err", cerr)
	}
	return err
}

// closers are what start opened, closed by Run after every loop stopped.
type closers []func() error

func (c *closers) add(f func() error) { *c = append(*c, f) }

func (c closers) close() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		errs = append(errs, c[i]())
	}
	return errors.Join(errs...)
}

// start builds the agent in dependency order and starts its loops on g;
// an error is a start-up failure.
func (a *Agent) start(ctx context.Context, g *supervise.Group, cl *closers) error {
	cfg := a.cfg
	for _, d := range []string{a.dir, a.path("pods"), a.path("pod-manifests"), a.path("images")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	// The log endpoint's port first: a port taken fails the start at
	// once, before containerd starts or the server is asked anything.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("agent: log endpoint (--agent-listen): %w", err)
	}
	cl.add(func() error { return closeListener(ln) })
	a.mu.Lock()
	a.logAddr = ln.Addr()
	a.mu.Unlock()

	socket, err := a.containerdSocket(ctx, g)
	if err != nil {
		return err
	}
	rt, err := containerd.New(ctx, containerd.Config{Socket: socket, Namespace: Namespace, DataDir: a.dir, CgroupRoot: cfg.CgroupRoot, PodPIDsLimit: cfg.PodMaxPIDs, Logger: a.log.With("component", "runtime"), Clock: a.clk})
	if err != nil {
		return fmt.Errorf("agent: containerd at %s: %w", socket, err)
	}
	cl.add(rt.Close)
	a.Runtime = rt
	importer := newImageImporter(a.path("images"), rt, a.clk, a.log.With("component", "images"))
	importer.scan(ctx)
	g.Go("images", importer.run)

	cp, err := checkpoint.New(checkpoint.Config{Dir: a.path("checkpoint"), Clock: a.clk, Logger: a.log.With("component", "checkpoint")})
	if err != nil {
		return err
	}
	merger, err := config.NewMerger(config.MergerConfig{Sources: []string{config.SourceAPI, config.SourceFile}, Checkpoint: cp})
	if err != nil {
		return err
	}
	statuses, objs, events := newDeferredStatus(), &objectGetter{}, &deferredRecorder{}
	// The machine's facts, read once for what starts now (the registrar
	// re-reads them when it registers).
	si, err := node.ReadSystemInfo(ctx, a.dir)
	if err != nil {
		return fmt.Errorf("agent: system info: %w", err)
	}
	hostIP := a.hostIP(si)
	ncfg := network.Config{NodeName: cfg.NodeName, StateDir: a.path("network"), ClusterCIDR: cfg.ClusterCIDR, ServiceCIDR: cfg.ServiceCIDR, NodeIP: cfg.NodeIP, Logger: a.log.With("component", "network")}
	if cfg.Network != nil {
		cfg.Network(&ncfg)
	}
	nw, err := network.New(ncfg)
	if err != nil {
		return fmt.Errorf("agent: pod network: %w", err)
	}
	cl.add(nw.Close)
	a.network = nw
	if a.services, err = newServices(a); err != nil {
		return fmt.Errorf("agent: services: %w", err)
	}
	a.services.start(g)
	probes := make(chan kubelet.ProbeResult, 64)
	pr, err := prober.New(prober.Config{Runtime: rt, Clock: a.clk, PodIP: nw.PodIP, Logger: a.log.With("component", "prober"),
		OnUpdate: func(u prober.Update) {
			select {
			case probes <- kubelet.ProbeResult{PodUID: u.PodUID, Container: u.Container}:
			case <-ctx.Done():
			}
		}})
	if err != nil {
		return err
	}
	cl.add(func() error { pr.Stop(); return nil })
	var em *eviction.Manager // set below; Admit is called only once the kubelet runs
	k, err := kubelet.New(kubelet.Config{
		NodeName: cfg.NodeName, PodsDir: a.path("pods"), Runtime: rt, Status: statuses, Objects: objs, Events: events,
		Clock: a.clk, Logger: a.log.With("component", "kubelet"), HostIP: func() string { return hostIP },
		SourcesReady: merger.SeenAllSources, Network: nw, Prober: pr, ProbeResults: probes,
		ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain,
		Admit: func(p *api.Pod, others []*api.Pod) (bool, string, string) { return em.Admit(p, others) },
	})
	if err != nil {
		return err
	}
	a.Kubelet = k
	if em, err = a.evictionManager(si, k, rt, events); err != nil {
		return err
	}
	a.eviction = em
	g.Go("eviction", em.Run)
	g.Go("kubelet", func(ctx context.Context) error { return k.Run(ctx, merger.Updates()) })
	g.Go("checkpoint", cp.Run)
	if err := merger.Restore(ctx, cp.Load()); err != nil && ctx.Err() == nil {
		a.log.Warn("restore checkpoint", "err", err)
	}
	files, err := config.NewFileSource(config.FileSourceConfig{Dir: a.path("pod-manifests"), NodeName: cfg.NodeName, Clock: a.clk, Logger: a.log.With("component", "static-pods")}, merger)
	if err != nil {
		return err
	}
	g.Go("static-pods", files.Run)
	if cfg.Ready != nil {
		cfg.Ready(a)
	}

	// Joining waits for the server as long as it takes; then what needs
	// the server starts, and this loop only waits for the end.
	g.Go("server connection", func(ctx context.Context) error {
		cred, err := a.join(ctx)
		if err != nil {
			return err
		}
		if err := a.online(ctx, g, cred, ln, merger, statuses, objs, events); err != nil {
			return fmt.Errorf("agent: start the server connection: %w", err)
		}
		<-ctx.Done()
		return ctx.Err()
	})
	return nil
}

// closeListener closes ln, which the log server may have closed already.
func closeListener(ln net.Listener) error {
	if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close log endpoint: %w", err)
	}
	return nil
}

func (a *Agent) path(elem ...string) string {
	return filepath.Join(append([]string{a.dir}, elem...)...)
}

// hostIP is the node's address for pod status (hostIP, and the pod IP of
// hostNetwork pods).
func (a *Agent) hostIP(si node.SystemInfo) string {
	if a.cfg.NodeIP != "" {
		return a.cfg.NodeIP
	}
	if len(si.IPs) > 0 {
		return si.IPs[0]
	}
	return "127.0.0.1"
}

// containerdSocket is the configured socket when it exists; else the
// agent starts and supervises its own containerd if one is on PATH.
func (a *Agent) containerdSocket(ctx context.Context, g *supervise.Group) (string, error) {
	if st, err := os.Stat(a.cfg.Containerd); err == nil && st.Mode()&os.ModeSocket != 0 {
		return a.cfg.Containerd, nil
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return "", fmt.Errorf("agent: %w: no socket at %s and no containerd binary on PATH (apt-get install containerd runc)", ErrNoContainerd, a.cfg.Containerd)
	}
	dcfg := daemon.Config{Binary: bin, Dir: a.path("containerd"), Logger: a.log.With("component", "containerd"), Clock: a.clk}
	if err := dcfg.Validate(); err != nil {
		return "", fmt.Errorf("agent: %w", err)
	}
	// A managed containerd left running by an agent that was killed
	// keeps its containers: use it rather than start a second daemon on
	// the same state.
	a.imageFSDir = filepath.Join(dcfg.Dir, "root")
	if answers(dcfg.Socket) {
		a.log.Info("using the managed containerd already running", "socket", dcfg.Socket)
		return dcfg.Socket, nil
	}
	a.log.Info("starting a managed containerd", "binary", bin, "dir", a.path("containerd"))
	socket, wait, err := daemon.Supervise(ctx, dcfg)
	if err != nil {
		return "", fmt.Errorf("agent: start containerd: %w", err)
	}
	g.Go("containerd", func(context.Context) error { return wait() })
	return socket, nil
}

// answers reports whether a unix socket accepts connections.
func answers(socket string) bool {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// join gets the node's credentials, retrying with back-off while the
// server is away or refuses (a token fixed on the server side works
// without a restart); it fails only when ctx ends.
func (a *Agent) join(ctx context.Context) (node.Credentials, error) {
	cred, err := node.JoinRetry(ctx, node.JoinConfig{Server: a.cfg.Server, Token: a.cfg.Token, NodeName: a.cfg.NodeName, Dir: a.dir, DialContext: a.cfg.DialContext}, a.clk, a.log)
	if err != nil {
		return node.Credentials{}, err
	}
	a.mu.Lock()
	a.joined = &cred
	a.mu.Unlock()
	a.log.Info("joined", "server", cred.Server, "node", cred.NodeName)
	return cred, nil
}

// online starts what needs the server: the API source, status manager,
// events, secrets, the log endpoint and node registration.
func (a *Agent) online(ctx context.Context, g *supervise.Group, cred node.Credentials, ln net.Listener, merger *config.Merger, statuses *deferredStatus, objs *objectGetter, events *deferredRecorder) error {
	ccfg := cred.ClientConfig()
	ccfg.DialContext = a.cfg.DialContext
	c, err := client.New(ccfg)
	if err != nil {
		return err
	}
	sm, err := status.New(status.Config{Client: c, NodeName: a.cfg.NodeName, Clock: a.clk, Logger: a.log.With("component", "status")})
	if err != nil {
		return err
	}
	g.Go("status", sm.Run)
	statuses.attach(sm)
	cache, err := objects.New(objects.Config{Client: c, Clock: a.clk, Logger: a.log.With("component", "objects")})
	if err != nil {
		return err
	}
	objs.attach(cache)
	// The pod, Service and EndpointSlice watches, the peer feed and the
	// tunnel's control share one stream.
	mux := client.NewWatchMux(c, a.clk)
	g.Go("watch-stream", func(ctx context.Context) error {
		mux.Run(ctx)
		return ctx.Err()
	})
	watches := client.MuxedWatches{Client: c, Mux: mux}
	src, err := config.NewAPISource(config.APISourceConfig{Client: watches, NodeName: a.cfg.NodeName, Clock: a.clk, Logger: a.log.With("component", "api-source")}, merger)
	if err != nil {
		return err
	}
	g.Go("api-source", src.Run)
	rec, err := status.NewRecorder(status.RecorderConfig{Client: c, NodeName: a.cfg.NodeName, Clock: a.clk, Logger: a.log.With("component", "events")})
	if err != nil {
		return err
	}
	g.Go("events", rec.Run)
	events.attach(rec)
	sink := &readyNotifier{sink: a.network, ready: a.network.Ready, changed: a.triggerNodeStatus}
	nodes := &network.PeerWatcher{Client: watches, Sink: sink, Clock: a.clk, Logger: a.log.With("component", "network")}
	g.Go("node-watcher", nodes.Run)
	a.services.watch(g, watches)
	reaper := &volumes.Reaper{Dir: a.path("volumes"), Volumes: volumeChecker{c}, Clock: a.clk, Logger: a.log.With("component", "volumes")}
	g.Go("volume-reaper", func(ctx context.Context) error {
		reaper.Run(ctx)
		return ctx.Err()
	})

	cert, fp, err := logs.EnsureServingCert(a.dir, a.cfg.NodeName, a.clk.Now())
	if err != nil {
		return err
	}
	port, err := a.serveLogs(g, ln, cert, cred.CAData)
	if err != nil {
		return err
	}
	si := func(ctx context.Context) (node.SystemInfo, error) {
		info, err := node.ReadSystemInfo(ctx, a.dir)
		if err == nil && a.cfg.NodeIP != "" {
			info.IPs = []string{a.cfg.NodeIP}
		}
		return info, err
	}
	reg := node.NewRegistrar(node.Config{
		API: c, NodeName: a.cfg.NodeName, Labels: a.cfg.Labels, SystemReserved: a.cfg.SystemReserved, MaxPods: a.cfg.MaxPods,
		Info: si, Runtime: a.Runtime, Images: containerImages(a.Runtime), AgentPort: port, AgentCertSHA256: fp,
		Conditions: a.eviction.Conditions, Taints: a.eviction.Taints, TaintKeys: eviction.PressureTaintKeys(),
		NetworkReady: a.network.Ready, Heartbeat: a.cfg.NodeStatusInterval, Clock: a.clk, Logger: a.log.With("component", "node"),
		// Heard from the server after a silence: the pod stream may be
		// stuck on a connection that died without a word.
		Recovered: src.Resync,
	})
	a.mu.Lock()
	a.registrar = reg
	a.mu.Unlock()
	g.Go("node", reg.Run)
	// The server counts a usage report as a heartbeat: the registrar
	// hears of each and of when the next is due, and skips the beats
	// they stand for.
	rep, err := usage.New(usage.Config{NodeName: a.cfg.NodeName, Source: a.eviction, Detailer: a.nodeStats, API: c,
		Interval: a.cfg.UsageInterval, Clock: a.clk, Logger: a.log.With("component", "usage"),
		Heard: reg.Heard, StatusWanted: reg.StatusWanted, Due: reg.ReportDue})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.usage = rep
	a.mu.Unlock()
	g.Go("usage", rep.Run)
	a.startTunnel(g, c, watches, cred, &usage.MetricsHandler{Reporter: rep, Eviction: a.eviction})
	g.Go("release start-up pages", a.releaseStartupPages)
	return nil
}

// startupSettle is how long after going online the agent drops its
// start-up pages: by then every loop has run once.
const startupSettle = 15 * time.Second

// releaseStartupPages unmaps, once start-up is over, the pages of the
// binary that the start-up of every linked package (server and CLI
// included) faulted in (see internal/footprint), then waits for ctx.
func (a *Agent) releaseStartupPages(ctx context.Context) error {
	t := a.clk.NewTimer(startupSettle)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
	}
	if n, err := footprint.ReleaseStartupPages(); err != nil {
		a.log.Warn("release start-up pages", "err", err)
	} else {
		a.log.Debug("released start-up pages", "bytes", n)
	}
	<-ctx.Done()
	return ctx.Err()
}

// Usage returns the last usage report the agent built (what it sent the
// server and serves on /metrics); ok is false before the first.
func (a *Agent) Usage() (rep api.UsageReport, ok bool) {
	a.mu.Lock()
	r := a.usage
	a.mu.Unlock()
	if r == nil {
		return api.UsageReport{}, false
	}
	rep = r.Latest()
	return rep, !rep.Time.IsZero()
}

// serveLogs serves the agent's HTTPS log endpoint on ln and returns its
// port.
func (a *Agent) serveLogs(g *supervise.Group, ln net.Listener, cert tls.Certificate, ca []byte) (int, error) {
	tcfg, err := logs.TLSConfig(cert, ca)
	if err != nil {
		return 0, err
	}
	h := &logs.Handler{Path: a.logPath, Clock: a.clk, Logger: a.log.With("component", "logs")}
	srv := &http.Server{Handler: h, TLSConfig: tcfg, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelDebug)}
	g.Go("logs", func(ctx context.Context) error {
		served := make(chan error, 1)
		go func() { served <- srv.ServeTLS(ln, "", "") }()
		select {
		case err := <-served:
			return fmt.Errorf("serve logs: %w", err)
		case <-ctx.Done():
			err := srv.Close()
			<-served
			return errors.Join(ctx.Err(), err)
		}
	})
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startTunnel keeps the tunnel to the server open, as a stream of the
// API connection c where it can: the server sends every request for
// this agent (logs, exec, attach, port-forward) through it, so it never
// has to dial the agent.
func (a *Agent) startTunnel(g *supervise.Group, c *client.Client, shared streaming.SharedStream, cred node.Credentials, metrics http.Handler) {
	h := &streaming.Handler{
		Logs:    &logs.Handler{Path: a.logPath, Clock: a.clk, Logger: a.log.With("component", "logs"), AllowUnverified: true},
		Metrics: metrics,
		Targets: a.Kubelet, Exec: a.Runtime, Clock: a.clk, Logger: a.log.With("component", "streaming"),
	}
	tc := &streaming.Client{
		API:     c,
		Shared:  shared,
		Dial:    tunnel.DialConfig{Server: cred.Server, CAData: cred.CAData, Token: cred.Credential, DialContext: a.cfg.DialContext},
		Handler: h, Clock: a.clk, Logger: a.log.With("component", "tunnel"),
		Backoff: backoff.Backoff{Min: 500 * time.Millisecond, Max: 30 * time.Second},
	}
	a.mu.Lock()
	a.tunnel = tc
	a.mu.Unlock()
	g.Go("tunnel", tc.Run)
}

// logPath maps the kubelet's not-found to the log endpoint's.
func (a *Agent) logPath(ns, pod, container string, previous bool) (string, error) {
	p, err := a.Kubelet.LogPath(ns, pod, container, previous)
	if errors.Is(err, kubelet.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", err, logs.ErrNoLog)
	}
	return p, err
}
