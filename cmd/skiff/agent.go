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
	"strconv"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/eviction"
	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/internal/flagconf"
	"github.com/skiffhq/skiff/server"
)

// agentFlags are the settings of `skiff agent`.
type agentFlags struct {
	config      string
	logLevel    string
	server      string
	token       string
	dataDir     string
	clusterCIDR string
	// service settings, the server's own
	serviceCIDR, clusterDNS, clusterDomain string
	values                                 map[string]*string
}

func newAgentFlagSet(out io.Writer) (*flag.FlagSet, *agentFlags) {
	f := &agentFlags{values: map[string]*string{}}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.config, "config", defaultConfigFile, "config file (YAML, keys are flag names)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&f.server, "server", "", "the server's URL, https://host:7443, or a comma list of servers sharing one datastore (the agent fails over between them)")
	fs.StringVar(&f.token, "token", "", "join token (SKF1.…); not needed once joined")
	fs.StringVar(&f.dataDir, "data-dir", server.DefaultDataDir, "state directory; the agent's is <data-dir>/agent")
	fs.StringVar(&f.clusterCIDR, "cluster-cidr", server.DefaultClusterCIDR, "the cluster's pod network (the server's --cluster-cidr)")
	fs.StringVar(&f.serviceCIDR, "service-cidr", server.DefaultServiceCIDR, "the cluster's Service addresses (the server's --service-cidr)")
	fs.StringVar(&f.clusterDNS, "cluster-dns", server.DefaultClusterDNS, "the cluster DNS address this agent serves (the server's --cluster-dns)")
	fs.StringVar(&f.clusterDomain, "cluster-domain", server.DefaultClusterDomain, "the cluster DNS domain (the server's --cluster-domain)")
	for _, a := range agentFlagDefaults {
		f.values[a.name] = fs.String(a.name, a.def, a.usage)
	}
	return fs, f
}

// parseAgentFlags parses args, the environment (SKIFF_SERVER, SKIFF_TOKEN,
// … as the packages' environment file sets them) and the config files.
func parseAgentFlags(env *cliEnv, args []string) (*flag.FlagSet, *agentFlags, error) {
	pre, pf := newAgentFlagSet(io.Discard)
	if err := pre.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs, _ := newAgentFlagSet(env.stdout)
			fmt.Fprintln(env.stdout, "Usage: skiff agent --server URL --token TOKEN [flags]\n\nFlags (each also SKIFF_<FLAG> and a key of --config):")
			fs.PrintDefaults()
			return nil, nil, errHelp
		}
		return nil, nil, usageError{err.Error()}
	}
	explicit := false
	pre.Visit(func(fl *flag.Flag) { explicit = explicit || fl.Name == "config" })
	fs, f := newAgentFlagSet(env.stderr)
	// The server's keys may sit in the same /etc/skiff/config.yaml.
	others, _ := newServerFlagSet(io.Discard)
	src := flagconf.Sources{Getenv: env.getenv, ConfigFile: pf.config, Explicit: explicit, OtherKeys: flagconf.Names(others)}
	if err := flagconf.Parse(fs, args, src); err != nil {
		return nil, nil, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, nil, usageError{fmt.Sprintf("skiff agent takes no arguments, got %q", fs.Args())}
	}
	if f.server == "" {
		return nil, nil, usageError{"skiff agent needs --server (or SKIFF_SERVER)"}
	}
	return fs, f, nil
}

func runAgent(ctx context.Context, env *cliEnv, args []string) error {
	_, f, err := parseAgentFlags(env, args)
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
	dataDir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return err
	}
	values := map[string]string{}
	for k, v := range f.values {
		values[k] = *v
	}
	cfg, err := agentConfig(values, dataDir)
	if err != nil {
		return usageError{err.Error()}
	}
	cfg.Server, cfg.Token, cfg.ClusterCIDR = f.server, f.token, f.clusterCIDR
	cfg.ServiceCIDR, cfg.ClusterDNS, cfg.ClusterDomain = f.serviceCIDR, f.clusterDNS, f.clusterDomain
	cfg.Logger = slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(agentGCPercent)
	}
	return agent.Run(ctx, cfg)
}

// agentGCPercent is the agent's GOGC unless the environment sets one. An
// idle agent's live heap is 2–3 MB; at 50 its heap grows to 1.5×, not
// 2×, of that between collections: about 2 MB less resident memory for a
// collection every few seconds that costs a millisecond or two.
const agentGCPercent = 50

// agentConfig turns the agent flags (by name) into an agent.Config.
func agentConfig(v map[string]string, dataDir string) (agent.Config, error) {
	cfg := agent.Config{
		DataDir: dataDir, NodeName: v["node-name"], Containerd: v["containerd"], CgroupRoot: v["cgroup-root"],
		NodeIP: v["node-ip"], Listen: v["agent-listen"],
	}
	var err error
	if cfg.Labels, err = node.ParseLabels(v["labels"]); err != nil {
		return cfg, fmt.Errorf("--labels: %w", err)
	}
	if cfg.SystemReserved, err = node.ParseResourceList(v["system-reserved"]); err != nil {
		return cfg, fmt.Errorf("--system-reserved: %w", err)
	}
	if cfg.Eviction, err = eviction.ParseConfig(v); err != nil {
		return cfg, err
	}
	if s := v["max-pods"]; s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("--max-pods %q: want a positive integer", s)
		}
		cfg.MaxPods = n
	}
	if s := v["pod-max-pids"]; s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n == 0 || n < -1 {
			return cfg, fmt.Errorf("--pod-max-pids %q: want a positive integer, or -1 for no limit", s)
		}
		cfg.PodMaxPIDs = max(n, 0)
	}
	return cfg, nil
}
