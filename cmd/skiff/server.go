package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/internal/flagconf"
	"github.com/skiffhq/skiff/internal/supervise"
	"github.com/skiffhq/skiff/server"
)

// defaultConfigFile is where `skiff server` and `skiff agent` read their
// settings unless --config says otherwise.
const defaultConfigFile = "/etc/skiff/config.yaml"

// stringList is a flag that may be repeated and also takes comma lists
// (as the environment and config files give it).
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// serverFlags are the settings of `skiff server`.
type serverFlags struct {
	config      string
	logLevel    string
	memoryLimit string
	cfg         server.Config
	tlsSANs     stringList
	// agent holds the agent flags, by name. `skiff server` accepts them
	// so one config file serves both; they are handed to the local agent
	// once it exists (issue 5) and are not interpreted here.
	agent map[string]*string
}

// agentFlagDefaults are the agent flags SPEC.md lists, with their
// defaults ("" where the agent computes one).
var agentFlagDefaults = []struct{ name, def, usage string }{
	{"node-name", "", "name of this machine's Node (default: host name)"},
	{"labels", "", "labels of this machine's Node, k=v,..."},
	{"containerd", "/run/containerd/containerd.sock", "containerd socket"},
	{"cgroup-root", "/skiff", "cgroup under which pods run"},
	{"system-reserved", "", "resources kept for the system, cpu=...,memory=..."},
	{"max-pods", "110", "most pods this machine runs"},
	{"pod-max-pids", "-1", "most processes and threads one pod runs (its cgroup's pids.max; -1: no limit)"},
	{"eviction-hard", "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%", "hard eviction thresholds"},
	{"eviction-soft", "", "soft eviction thresholds"},
	{"eviction-soft-grace-period", "", "grace periods of the soft thresholds"},
	{"eviction-minimum-reclaim", "", "minimum reclaim per eviction signal"},
	{"eviction-pressure-transition-period", "30s", "how long a pressure condition is held"},
	{"eviction-max-pod-grace-period", "", "longest grace period granted on soft eviction"},
	{"node-ip", "", "the node's address the server dials (default: every global address of the machine)"},
	{"agent-listen", "0.0.0.0:10250", "where the agent serves logs to the server (HTTPS)"},
}

func newServerFlagSet(out io.Writer) (*flag.FlagSet, *serverFlags) {
	f := &serverFlags{agent: map[string]*string{}}
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.config, "config", defaultConfigFile, "config file (YAML, keys are flag names)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.cfg.DataDir, "data-dir", server.DefaultDataDir, "state directory; the server's is <data-dir>/server")
	fs.StringVar(&f.cfg.Listen, "listen", server.DefaultListen, "HTTPS listen address")
	fs.StringVar(&f.cfg.Datastore, "datastore", "", "datastore URL: sqlite://<path> (default <data-dir>/server/state.db) or postgres://user[:password]@host:port/db?sslmode=... shared by several servers")
	fs.IntVar(&f.cfg.MaxRequestsInFlight, "max-requests-inflight", server.DefaultMaxRequestsInFlight, "requests served at once, watches and streams aside; more get 429 (negative: no limit)")
	fs.IntVar(&f.cfg.MaxConnsPerClient, "max-connections-per-client", server.DefaultMaxConnsPerClient, "open connections per client address, e.g. for agents behind one NAT (negative: no limit)")
	fs.StringVar(&f.memoryLimit, "memory-limit", memoryLimitAuto, "soft memory limit of the server process: auto (3/4 of its cgroup's memory.max or of the machine's memory; GOMEMLIMIT wins), off, or a size such as 1Gi")
	fs.StringVar(&f.cfg.AuditLog, "audit-log", "", "audit log of writes and refused requests (JSON lines; default <data-dir>/server/audit.log; \"off\" turns it off)")
	fs.StringVar(&f.cfg.EncryptionKeyFile, "encryption-key-file", "", "key file that encrypts Secrets at rest (default <data-dir>/server/encryption.key); servers sharing a PostgreSQL datastore need the same file")
	fs.StringVar(&f.cfg.ClusterCIDR, "cluster-cidr", server.DefaultClusterCIDR, "pod network, one /24 per node")
	fs.StringVar(&f.cfg.ServiceCIDR, "service-cidr", server.DefaultServiceCIDR, "where Service cluster IPs come from")
	fs.StringVar(&f.cfg.NodePortRange, "service-node-port-range", server.DefaultNodePortRange, "where Service node ports come from")
	fs.StringVar(&f.cfg.ClusterDNS, "cluster-dns", server.DefaultClusterDNS, "cluster IP of the cluster DNS (inside --service-cidr); also the local agent's")
	fs.StringVar(&f.cfg.ClusterDomain, "cluster-domain", server.DefaultClusterDomain, "DNS domain of Services; also the local agent's")
	fs.DurationVar(&f.cfg.NodeMonitorGrace, "node-monitor-grace", server.DefaultNodeMonitorGrace, "how long a silent node stays Ready")
	fs.DurationVar(&f.cfg.EventTTL, "event-ttl", server.DefaultEventTTL, "how long an Event lives after it was last seen (at least 1m)")
	fs.DurationVar(&f.cfg.PodEvictionTimeout, "pod-eviction-timeout", server.DefaultPodEvictionTimeout, "how long pods stay on a lost node")
	fs.Var(&f.tlsSANs, "tls-san", "extra name or address for the server certificate (repeatable, or a comma list)")
	fs.StringVar(&f.cfg.SchedulerScoring, "scheduler-scoring", "LeastAllocated", "scheduler resource scoring: LeastAllocated (spread) or MostAllocated (bin-pack)")
	fs.BoolVar(&f.cfg.DisableScheduler, "disable-scheduler", false, "do not run the built-in scheduler")
	fs.BoolVar(&f.cfg.DisableControllers, "disable-controllers", false, "do not run the built-in controllers (node lifecycle, workloads, jobs, volumes, garbage collection)")
	fs.BoolVar(&f.cfg.DisableAgent, "disable-agent", false, "do not run a local agent")
	for _, a := range agentFlagDefaults {
		f.agent[a.name] = fs.String(a.name, a.def, "agent: "+a.usage)
	}
	return fs, f
}

// parseServerFlags parses args, the environment and the config file.
func parseServerFlags(env *cliEnv, args []string) (*serverFlags, error) {
	// A first pass finds --config; flagconf then layers all sources.
	pre, pf := newServerFlagSet(io.Discard)
	if err := pre.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs, _ := newServerFlagSet(env.stdout)
			fmt.Fprintln(env.stdout, "Usage: skiff server [flags]\n       skiff server backup --to FILE   (online, also while the server runs)\n       skiff server restore --from FILE [--key FILE.key] (with the server stopped)\n       skiff server rotate-key           (with the server stopped)\n\nFlags (each also SKIFF_<FLAG> and a key of --config):")
			fs.PrintDefaults()
			return nil, errHelp
		}
		return nil, usageError{err.Error()}
	}
	explicit := false
	pre.Visit(func(fl *flag.Flag) { explicit = explicit || fl.Name == "config" })
	fs, f := newServerFlagSet(env.stderr)
	// The agent's keys (--server, --token) may sit in the same file.
	others, _ := newAgentFlagSet(io.Discard)
	src := flagconf.Sources{Getenv: env.getenv, ConfigFile: pf.config, Explicit: explicit, OtherKeys: flagconf.Names(others)}
	if err := flagconf.Parse(fs, args, src); err != nil {
		return nil, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Sprintf("skiff server takes no arguments, got %q", fs.Args())}
	}
	f.config = pf.config
	f.cfg.TLSSANs = f.tlsSANs
	return f, nil
}

// errHelp means -h was given and the usage printed.
var errHelp = errors.New("help requested")

func runServer(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "backup":
			return runServerBackup(ctx, env, args[1:])
		case "restore":
			return runServerRestore(ctx, env, args[1:])
		case "migrate":
			return runServerMigrate(ctx, env, args[1:])
		case "rotate-key":
			return runServerRotateKey(ctx, env, args[1:])
		}
	}
	f, err := parseServerFlags(env, args)
	if errors.Is(err, errHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", f.logLevel)}
	}
	if f.cfg.DataDir, err = filepath.Abs(f.cfg.DataDir); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := f.cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	limit, how, setLimit, err := memoryLimitFor(f.memoryLimit, env.getenv, memoryBudget)
	if err != nil {
		return usageError{err.Error()}
	}
	logOut := newLogWriter(env.stderr, logBufferLimit, env.clock)
	defer logOut.Close()
	log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))
	f.cfg.Logger = log
	if setLimit {
		debug.SetMemoryLimit(limit)
	}
	gcPercent, gcHow, setGC := serverGCPercentFor(env.getenv)
	if setGC {
		// GOGC in the environment is the operator's: it stays put.
		debug.SetGCPercent(gcPercent)
		f.cfg.GCBurst = serverGCBurst
	}
	log.Info("memory limit", "limit_mib", debug.SetMemoryLimit(-1)>>20, "from", how, "gc_percent", gcHow)
	values := map[string]string{}
	for _, a := range agentFlagDefaults {
		values[a.name] = *f.agent[a.name]
	}
	acfg, err := agentConfig(values, f.cfg.DataDir)
	if err != nil {
		return usageError{err.Error()}
	}
	acfg.Logger = log.With("component", "agent")
	acfg.ClusterCIDR = f.cfg.ClusterCIDR
	acfg.ServiceCIDR, acfg.ClusterDNS, acfg.ClusterDomain = f.cfg.ServiceCIDR, f.cfg.ClusterDNS, f.cfg.ClusterDomain
	// The server and its local agent run under one supervisor: the
	// first that fails stops the other, and its error is the exit
	// status.
	g, _ := supervise.New(ctx, log)
	f.cfg.Ready = func(info server.Info) {
		fmt.Fprintf(env.stdout, "skiff server is up: API %s  dashboard %s/  admin token %s  export KUBECONFIG=%s\n",
			info.URL, info.URL, info.AdminTokenPath, info.KubeconfigPath)
		if f.cfg.DisableAgent {
			return
		}
		tok, err := os.ReadFile(info.JoinTokenPath)
		if err != nil {
			g.Fail(fmt.Errorf("local agent: read join token: %w", err))
			return
		}
		acfg.Server, acfg.Token = info.URL, strings.TrimSpace(string(tok))
		g.Go("local agent", func(ctx context.Context) error {
			err := agent.Run(ctx, acfg)
			if errors.Is(err, agent.ErrNoContainerd) {
				// Without containerd the server keeps serving: the
				// cluster is then a control plane only.
				log.Error("local agent not started; this server runs no pods", "err", err)
				<-ctx.Done()
				return ctx.Err()
			}
			if err != nil {
				return fmt.Errorf("%w (--disable-agent runs the server without it)", err)
			}
			return nil
		})
	}
	start := time.Now()
	g.Go("server", func(ctx context.Context) error { return server.Run(ctx, f.cfg) })
	err = g.Wait()
	log.Info("skiff server stopped", "uptime", time.Since(start).Round(time.Second))
	return err
}
