package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// FleetConfig configures a Fleet.
type FleetConfig struct {
	Server string // https://127.0.0.1:port
	Token  string // join token
	Agents int
	// Zones spreads the Nodes over zone-0 ... zone-(Zones-1), round robin.
	Zones int
	Dir   string // agents' state goes under Dir/<node name>
	// Heartbeat is each agent's heartbeat period (0: the agent's 10 s).
	Heartbeat time.Duration
	// StartRate is how many agents start per second (0: all at once).
	StartRate int
	// Usage is each agent's usage report period (0: none); the real
	// agent's is agent/usage.DefaultInterval.
	Usage time.Duration
	// KeepBeats makes the agents beat every period even right after a
	// usage report the server took, as agents did before the server
	// counted reports as heartbeats (for a comparison with an older
	// server).
	KeepBeats bool
	// Full: AgentConfig.Full, with Seen counting for every agent.
	Full     bool
	PeerSets bool // AgentConfig.PeerSets
	Seen     *Seen
	Clock    clock.Clock
	Logger   *slog.Logger
	Metrics  *Metrics
}

// Fleet is many simulated agents.
type Fleet struct {
	Agents []*Agent
	wg     sync.WaitGroup
}

// NodeName is the name of agent i.
func NodeName(i int) string { return fmt.Sprintf("fleet-%05d", i) }

// SourceIP is agent i's loopback address, 127.b.c.d with b, c, d in
// 1..250, never 127.0.0.1 (the harness's own).
func SourceIP(i int) net.IP {
	return net.IPv4(127, byte(1+i/(250*250)%250), byte(1+i/250%250), byte(1+i%250))
}

// StartFleet starts cfg.Agents agents at cfg.StartRate a second; they
// run until ctx ends (Wait waits for them).
func StartFleet(ctx context.Context, cfg FleetConfig) *Fleet {
	if cfg.Zones <= 0 {
		cfg.Zones = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	clk := clock.Or(cfg.Clock)
	f := &Fleet{Agents: make([]*Agent, cfg.Agents)}
	for i := range f.Agents {
		name := NodeName(i)
		f.Agents[i] = NewAgent(AgentConfig{Server: cfg.Server, Token: cfg.Token, Name: name, Zone: fmt.Sprintf("zone-%d", i%cfg.Zones),
			Dir: filepath.Join(cfg.Dir, name), SourceIP: SourceIP(i), Heartbeat: cfg.Heartbeat, Usage: cfg.Usage, KeepBeats: cfg.KeepBeats, Full: cfg.Full, PeerSets: cfg.PeerSets, Seen: cfg.Seen, Clock: clk, Logger: cfg.Logger, Metrics: cfg.Metrics})
	}
	f.wg.Go(func() {
		var tick clock.Ticker
		if cfg.StartRate > 0 {
			tick = clk.NewTicker(time.Second / time.Duration(cfg.StartRate))
			defer tick.Stop()
		}
		for _, a := range f.Agents {
			if tick != nil {
				select {
				case <-ctx.Done():
					return
				case <-tick.C():
				}
			}
			f.wg.Go(func() {
				if err := a.Run(ctx); err != nil && ctx.Err() == nil {
					cfg.Logger.Error("fleet agent", "node", a.Name(), "err", err)
				}
			})
		}
	})
	return f
}

// Wait waits for every agent to stop (after the context ends).
func (f *Fleet) Wait() { f.wg.Wait() }

// Count is how many agents satisfy ok.
func (f *Fleet) Count(ok func(*Agent) bool) int {
	n := 0
	for _, a := range f.Agents {
		if ok(a) {
			n++
		}
	}
	return n
}

// WaitFor polls every interval until every agent satisfies ok, or
// timeout passes (an error saying how many did).
func (f *Fleet) WaitFor(ctx context.Context, what string, ok func(*Agent) bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n := f.Count(ok)
		if n == len(f.Agents) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d agents after %v", what, n, len(f.Agents), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
