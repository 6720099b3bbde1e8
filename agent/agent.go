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
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
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
	// Listen is where the agent serves logs to the server (HTTPS).
	Listen string
	// NodeIP, when set, is the node's only InternalIP (what the server
	// dials for logs, the overlay's tunnel endpoint); else every global
	// address of the machine.
	NodeIP string
	// ClusterCIDR is the whole pod network (the server's
	// --cluster-cidr); "" means network.DefaultClusterCIDR.
	ClusterCIDR string
	// Network, when set, adjusts the pod network's configuration (tests
	// give each agent its own bridge and nftables table).
	Network func(*network.Config)
	// Eviction is the eviction manager's configuration
	// (eviction.ParseConfig of the --eviction-* flags).
	Eviction eviction.Config
	Clock    clock.Clock
	Logger   *slog.Logger
	// Ready, when set, is called once the kubelet runs (before the
	// server may have answered).
	Ready func(*Agent)
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
	eviction   *eviction.Manager
	imageFSDir string // containerd's root, for imagefs signals

	mu        sync.Mutex
	joined    *node.Credentials
	registrar *node.Registrar
	logAddr   net.Addr
}

// Dir is the agent's state directory, <data-dir>/agent.
func (a *Agent) Dir() string { return a.dir }

// LogAddr is the address the log endpoint listens on (nil before join).
func (a *Agent) LogAddr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.logAddr
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
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	a := &Agent{cfg: cfg, dir: filepath.Join(cfg.DataDir, "agent"), log: cfg.Logger, clk: cfg.Clock}
	for _, d := range []string{a.dir, a.path("pods"), a.path("pod-manifests"), a.path("images")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("agent: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	goRun := func(name string, f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f()
			a.log.Debug("agent loop ended", "loop", name)
		}()
	}

	socket, err := a.containerdSocket(ctx, goRun)
	if err != nil {
		return err
	}
	rt, err := containerd.New(ctx, containerd.Config{Socket: socket, Namespace: Namespace, DataDir: a.dir, CgroupRoot: cfg.CgroupRoot, Logger: a.log.With("component", "runtime"), Clock: a.clk})
	if err != nil {
		return fmt.Errorf("agent: containerd at %s: %w", socket, err)
	}
	defer rt.Close()
	a.Runtime = rt
	importer := newImageImporter(a.path("images"), rt, a.clk, a.log.With("component", "images"))
	importer.scan(ctx)
	goRun("images", func() { importer.run(ctx) })

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
	ncfg := network.Config{NodeName: cfg.NodeName, StateDir: a.path("network"), ClusterCIDR: cfg.ClusterCIDR, NodeIP: cfg.NodeIP, Logger: a.log.With("component", "network")}
	if cfg.Network != nil {
		cfg.Network(&ncfg)
	}
	nw, err := network.New(ncfg)
	if err != nil {
		return fmt.Errorf("agent: pod network: %w", err)
	}
	defer nw.Close()
	a.network = nw
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
	defer pr.Stop()
	var em *eviction.Manager // set below; Admit is called only once the kubelet runs
	k, err := kubelet.New(kubelet.Config{
		NodeName: cfg.NodeName, PodsDir: a.path("pods"), Runtime: rt, Status: statuses, Objects: objs, Events: events,
		Clock: a.clk, Logger: a.log.With("component", "kubelet"), HostIP: func() string { return hostIP },
		SourcesReady: merger.SeenAllSources, Network: nw, Prober: pr, ProbeResults: probes,
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
	goRun("eviction", func() { _ = em.Run(ctx) })
	kubeletDone := make(chan error, 1)
	goRun("kubelet", func() { kubeletDone <- k.Run(ctx, merger.Updates()) })
	goRun("checkpoint", func() { cp.Run(ctx) })
	if err := merger.Restore(ctx, cp.Load()); err != nil && ctx.Err() == nil {
		a.log.Warn("restore checkpoint", "err", err)
	}
	files, err := config.NewFileSource(config.FileSourceConfig{Dir: a.path("pod-manifests"), NodeName: cfg.NodeName, Clock: a.clk, Logger: a.log.With("component", "static-pods")}, merger)
	if err != nil {
		return err
	}
	goRun("static-pods", func() { files.Run(ctx) })
	if cfg.Ready != nil {
		cfg.Ready(a)
	}

	goRun("join", func() {
		cred, ok := a.join(ctx)
		if !ok {
			return
		}
		if err := a.online(ctx, goRun, cred, merger, statuses, objs, events); err != nil && ctx.Err() == nil {
			a.log.Error("agent: cannot talk to the server", "err", err)
			cancel()
		}
	})

	select {
	case <-ctx.Done():
		return nil
	case err := <-kubeletDone:
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("agent: kubelet stopped: %w", err)
	}
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
func (a *Agent) containerdSocket(ctx context.Context, goRun func(string, func())) (string, error) {
	if st, err := os.Stat(a.cfg.Containerd); err == nil && st.Mode()&os.ModeSocket != 0 {
		return a.cfg.Containerd, nil
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return "", fmt.Errorf("agent: no containerd socket at %s and no containerd binary on PATH (apt-get install containerd runc)", a.cfg.Containerd)
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
	goRun("containerd", func() { _ = wait() })
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

// join gets the node's credentials, retrying while the server is away.
func (a *Agent) join(ctx context.Context) (node.Credentials, bool) {
	backoff := time.Second
	for {
		cred, err := node.Join(ctx, node.JoinConfig{Server: a.cfg.Server, Token: a.cfg.Token, NodeName: a.cfg.NodeName, Dir: a.dir})
		if err == nil {
			a.mu.Lock()
			a.joined = &cred
			a.mu.Unlock()
			a.log.Info("joined", "server", cred.Server, "node", cred.NodeName)
			return cred, true
		}
		if api.IsForbidden(err) || api.ReasonOf(err) == api.StatusReasonUnauthorized || api.ReasonOf(err) == api.StatusReasonInvalid {
			a.log.Error("join refused; fix the token or node name and restart the agent", "err", err)
		} else {
			a.log.Warn("join: server not reachable yet, retrying", "err", err, "in", backoff)
		}
		if !clock.Sleep(ctx, a.clk, backoff) {
			return node.Credentials{}, false
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// online starts what needs the server: the API source, status manager,
// events, secrets, the log endpoint and node registration.
func (a *Agent) online(ctx context.Context, goRun func(string, func()), cred node.Credentials, merger *config.Merger, statuses *deferredStatus, objs *objectGetter, events *deferredRecorder) error {
	c, err := client.New(cred.ClientConfig())
	if err != nil {
		return err
	}
	sm, err := status.New(status.Config{Client: c, NodeName: a.cfg.NodeName, Clock: a.clk, Logger: a.log.With("component", "status")})
	if err != nil {
		return err
	}
	goRun("status", func() { sm.Run(ctx) })
	statuses.attach(sm)
	cache, err := objects.New(objects.Config{Client: c, Clock: a.clk, Logger: a.log.With("component", "objects")})
	if err != nil {
		return err
	}
	objs.attach(cache)
	src, err := config.NewAPISource(config.APISourceConfig{Client: c, NodeName: a.cfg.NodeName, Clock: a.clk, Logger: a.log.With("component", "api-source")}, merger)
	if err != nil {
		return err
	}
	goRun("api-source", func() { src.Run(ctx) })
	rec, err := status.NewRecorder(status.RecorderConfig{Client: c, NodeName: a.cfg.NodeName, Clock: a.clk, Logger: a.log.With("component", "events")})
	if err != nil {
		return err
	}
	goRun("events", func() { rec.Run(ctx) })
	events.attach(rec)
	nodes := &network.NodeWatcher{Client: c, Sink: a.network, Clock: a.clk, Logger: a.log.With("component", "network")}
	goRun("node-watcher", func() { nodes.Run(ctx) })
	reaper := &volumes.Reaper{Dir: a.path("volumes"), Volumes: volumeChecker{c}, Clock: a.clk, Logger: a.log.With("component", "volumes")}
	goRun("volume-reaper", func() { reaper.Run(ctx) })

	cert, fp, err := logs.EnsureServingCert(a.dir, a.cfg.NodeName, a.clk.Now())
	if err != nil {
		return err
	}
	port, err := a.serveLogs(ctx, goRun, cert, cred.CAData)
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
		NetworkReady: a.network.Ready, Clock: a.clk, Logger: a.log.With("component", "node"),
	})
	a.mu.Lock()
	a.registrar = reg
	a.mu.Unlock()
	goRun("node", func() { _ = reg.Run(ctx) })
	return nil
}

// serveLogs starts the agent's HTTPS log endpoint and returns its port.
func (a *Agent) serveLogs(ctx context.Context, goRun func(string, func()), cert tls.Certificate, ca []byte) (int, error) {
	tcfg, err := logs.TLSConfig(cert, ca)
	if err != nil {
		return 0, err
	}
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return 0, fmt.Errorf("agent: log endpoint: %w", err)
	}
	a.mu.Lock()
	a.logAddr = ln.Addr()
	a.mu.Unlock()
	h := &logs.Handler{Path: a.logPath, Clock: a.clk, Logger: a.log.With("component", "logs")}
	srv := &http.Server{Handler: h, TLSConfig: tcfg, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelDebug)}
	goRun("logs", func() { _ = srv.ServeTLS(ln, "", "") })
	goRun("logs-stop", func() {
		<-ctx.Done()
		_ = srv.Close()
	})
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// logPath maps the kubelet's not-found to the log endpoint's.
func (a *Agent) logPath(ns, pod, container string, previous bool) (string, error) {
	p, err := a.Kubelet.LogPath(ns, pod, container, previous)
	if errors.Is(err, kubelet.ErrNotFound) {
		return "", fmt.Errorf("%v: %w", err, logs.ErrNoLog)
	}
	return p, err
}
