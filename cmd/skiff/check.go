package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/skiffhq/skiff/agent/eviction"
	"github.com/skiffhq/skiff/cmd/skiff/internal/preflight"
	"github.com/skiffhq/skiff/internal/flagconf"
)

// runCheck is `skiff check`: preflight checks of this machine against the
// settings `skiff server` and `skiff agent` would use (the same flags,
// environment and config files). It exits 1 when a check fails.
func runCheck(ctx context.Context, env *cliEnv, args []string) error {
	pre, pf := newServerFlagSet(io.Discard)
	if err := pre.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs, _ := newServerFlagSet(env.stdout)
			fmt.Fprintln(env.stdout, "Usage: skiff check [flags]\n\nChecks this machine for skiff: kernel, cgroups, overlayfs, containerd, runc,\nnetlink, bridge, vxlan, nftables, ports, data dir, memory and disk.\nIt takes the flags of skiff server (each also SKIFF_<FLAG> and a key of --config):")
			fs.PrintDefaults()
			return nil
		}
		return usageError{err.Error()}
	}
	explicit := false
	pre.Visit(func(fl *flag.Flag) { explicit = explicit || fl.Name == "config" })
	fs, f := newServerFlagSet(env.stderr)
	others, _ := newAgentFlagSet(io.Discard)
	src := flagconf.Sources{Getenv: env.getenv, ConfigFile: pf.config, Explicit: explicit, OtherKeys: flagconf.Names(others)}
	if err := flagconf.Parse(fs, args, src); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("skiff check takes no arguments, got %q", fs.Args())}
	}
	dataDir, err := filepath.Abs(f.cfg.DataDir)
	if err != nil {
		return usageError{err.Error()}
	}
	values := map[string]string{}
	for k, v := range f.agent {
		values[k] = *v
	}
	ev, err := eviction.ParseConfig(values)
	if err != nil {
		return usageError{err.Error()}
	}
	facts := preflight.Gather(ctx, preflight.Settings{
		DataDir:    dataDir,
		Containerd: values["containerd"],
		Ports:      []preflight.Port{{Flag: "listen", Addr: f.cfg.Listen}, {Flag: "agent-listen", Addr: values["agent-listen"]}},
	})
	if failed := preflight.Format(env.stdout, preflight.Evaluate(facts, ev.Thresholds)); failed > 0 {
		return errReported
	}
	return nil
}
