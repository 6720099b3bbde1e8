package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // -pprof: the simulator's own profiles
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/skiffhq/skiff/agent/usage"
	"github.com/skiffhq/skiff/internal/schedlat"
	"github.com/skiffhq/skiff/test/fleet"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetsim:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg fleet.Config
	bin := flag.String("skiff", "", "the skiff binary (default: build ./cmd/skiff)")
	keep := flag.Bool("keep", false, "keep the temporary directory (server data and log)")
	verbose := flag.Bool("v", false, "log the agents' warnings")
	flag.IntVar(&cfg.Agents, "agents", 1000, "simulated agents")
	flag.IntVar(&cfg.Zones, "zones", 4, "zones the nodes are spread over")
	flag.IntVar(&cfg.StartRate, "start-rate", 200, "agents started per second")
	flag.DurationVar(&cfg.Heartbeat, "heartbeat", 10*time.Second, "each agent's heartbeat period")
	flag.DurationVar(&cfg.Window, "window", time.Minute, "steady-state window measured")
	flag.IntVar(&cfg.Pods, "pods", 2000, "pods bound directly to measure delivery")
	flag.IntVar(&cfg.BindRate, "bind-rate", 200, "direct binds per second")
	flag.IntVar(&cfg.Replicas, "replicas", 0, "replicas of the zone-spread Deployment (0: one per agent, -1: none)")
	flag.DurationVar(&cfg.Usage, "usage", usage.DefaultInterval, "each agent's usage report period, as the real agent's (0: none)")
	flag.BoolVar(&cfg.KeepBeats, "keep-beats", false, "agents beat every period even right after a usage report the server took (as before the server counted reports as heartbeats: for an older server)")
	flag.BoolVar(&cfg.Full, "full", true, "each agent also holds the real agent's Node, Service and EndpointSlice watches and its tunnel (false: its pod watch and heartbeats only, as before 2026-12-03)")
	flag.BoolVar(&cfg.PeerSets, "peer-sets", false, "with -full, each agent keeps the peer set as the real agent does (network.PeerWatcher): O(agents²) memory in this one process, 1 GB at 2,500 agents (false: it reads the feed and keeps only where to resume)")
	flag.BoolVar(&cfg.HoldOwnGC, "hold-gc", true, "after the collection before a measured phase, keep the simulator's collector from running in it unless its memory grows by 6 GiB (false: it paces itself, as before 2026-12-05)")
	flag.BoolVar(&cfg.CollectBetween, "collect-between", true, "run the simulator's own collector to completion before each measured phase after the steady window, and hold it inside each phase from the settle on (false: as before 2026-12-01)")
	flag.DurationVar(&cfg.Settle, "settle", 0, "how long the fleet runs after the join before the steady window")
	restart := flag.Bool("restart", true, "restart the server and time the fleet's return (false: no restart, whatever -restarts says)")
	flag.IntVar(&cfg.Restarts, "restarts", 1, "how many times to restart the server, timing the fleet's return each time")
	flag.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "bound on each phase")
	flag.DurationVar(&cfg.Cooldown, "cooldown", 0, "after the last phase, let the fleet run this long and sample the server once more (0: not)")
	flag.DurationVar(&cfg.SnapshotAt, "snapshot-at", 0, "keep both processes' goroutines this long after each restart's new process started, if the restart is not over (the server's need SKIFF_PPROF_ADDR; 0: only at a stall)")
	gogc := flag.Int("gogc", 400, "the simulator's own GOGC, set in-process so the server it starts keeps its own (0: Go's default, or the GOGC environment variable)")
	pprofAddr := flag.String("pprof", "", "serve the simulator's own net/http/pprof on this loopback address (its CPU shares the box with the server's)")
	flag.Parse()
	if !*restart {
		cfg.Restarts = 0
	}
	// Two fleets on one box measure each other: refuse to start a second.
	unlock, err := lockBox(filepath.Join(os.TempDir(), "skiff-fleetsim.lock"))
	if err != nil {
		return err
	}
	defer unlock()
	// A -tags fleetprof server serves its profiles here; a restart that
	// stalls keeps its goroutines and heap.
	cfg.ServerPprof = os.Getenv("SKIFF_PPROF_ADDR")
	// The simulator's collector shares the box's cores with the server.
	// At 10,000 agents its live heap is about 1 GiB, and at Go's default
	// of 100 a collection during the restart's reconnect storm took 5 s,
	// 3.5 s of it in assists, while the simulated agents' handshakes timed
	// out waiting for a core. A larger GOGC trades the box's spare memory
	// for fewer collections; it is set here, not in the environment the
	// server inherits.
	if *gogc > 0 {
		debug.SetGCPercent(*gogc)
	}
	if *pprofAddr != "" {
		host, _, err := net.SplitHostPort(*pprofAddr)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("-pprof %q: want a loopback host:port", *pprofAddr)
		}
		ln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return err
		}
		http.Handle("/debug/latencies", schedlat.Handler())
		go http.Serve(ln, nil) //nolint:errcheck // measurement only; ends with the process
	}

	// The simulator holds a connection per agent (the tunnel is a
	// stream of it; a few more while they join), and so does the
	// server, which inherits the limit.
	need := uint64(cfg.Agents) + 1024
	limit, err := fleet.RaiseFileLimit(2 * need)
	if err != nil {
		return err
	}
	if limit < need {
		return fmt.Errorf("the open file limit is %d; %d agents need about %d (raise the hard limit, ulimit -Hn)", limit, cfg.Agents, need)
	}
	dir, err := os.MkdirTemp("", "skiff-fleet-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Println("data in", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *bin == "" {
		if *bin, err = fleet.BuildSkiff(ctx, dir); err != nil {
			return err
		}
	}
	cfg.Bin, cfg.Dir, cfg.Progress = *bin, dir, os.Stdout
	level := slog.LevelError
	if *verbose {
		level = slog.LevelWarn
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	fmt.Printf("fleetsim: %d agents, %d zones, heartbeat %v, file limit %d, load %s\n", cfg.Agents, cfg.Zones, cfg.Heartbeat, limit, fleet.LoadAvg())
	rep, err := fleet.Run(ctx, cfg)
	fmt.Print(rep.Summary())
	return err
}

// lockBox takes an exclusive lock on path for as long as this process
// runs (the kernel drops it when the process ends, however it ends), or
// fails at once when another process holds it.
func lockBox(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another fleetsim holds %s: two fleets on one box measure each other", path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
