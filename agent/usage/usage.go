package usage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/skiffhq/skiff/agent/eviction"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// DefaultInterval is how often a report is sent: twice the agent's
// heartbeat (node.DefaultHeartbeat), so that every other heartbeat is a
// report (the server counts a report as a heartbeat: Config.Heard and
// Config.Due) and the agent makes one call a heartbeat period.
const DefaultInterval = 20 * time.Second

// Source is the eviction manager's latest reading: *eviction.Manager.
type Source interface {
	Latest() (eviction.Summary, []*api.Pod, bool)
}

// Detailer reads the containers and network of pods: *eviction.NodeStats.
type Detailer interface {
	PodDetails(ctx context.Context, pods []*api.Pod) map[string]eviction.PodDetail
}

// Poster sends a request to the server: *client.Client.
type Poster interface {
	Do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error)
}

// Config holds what a Reporter needs. Source, Detailer and NodeName are
// required; API may be nil (report kept for /metrics only).
type Config struct {
	NodeName string
	Source   Source
	Detailer Detailer
	API      Poster
	Interval time.Duration // default DefaultInterval
	Clock    clock.Clock
	Logger   *slog.Logger
	// Heard, when set, is told when the server took a report: the server
	// counts it as a heartbeat (the registrar's Heard), so the agent can
	// skip the beat it would send next.
	Heard func(at time.Time)
	// StatusWanted, when set, is called when the server answered 205: it
	// marked the node unreachable, and wants the full conditions again
	// (the registrar's StatusWanted).
	StatusWanted func()
	// Due, when set, is told when the next report is due each time one
	// is scheduled (the registrar's ReportDue), so that a beat that
	// would go out just before it is left to the report.
	Due func(at time.Time)
}

// Reporter builds and sends reports. Latest is safe for concurrent use.
type Reporter struct {
	cfg Config
	clk clock.Clock
	log *slog.Logger

	mu     sync.Mutex
	latest api.UsageReport
}

// New returns a Reporter for cfg.
func New(cfg Config) (*Reporter, error) {
	if cfg.Source == nil || cfg.Detailer == nil || cfg.NodeName == "" {
		return nil, errors.New("usage: Source, Detailer and NodeName are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reporter{cfg: cfg, clk: clock.Or(cfg.Clock), log: log}, nil
}

// Run reports every Interval until ctx ends, when it returns nil. A
// failed send is logged and dropped: the next report supersedes it, so
// nothing is retried sooner than Interval.
func (r *Reporter) Run(ctx context.Context) error {
	// The time first, then the ticker: a clock that moves in between
	// (a test's, stepped once the ticker waits) would announce the
	// first report for later than it goes.
	tick := r.clk.Now()
	t := r.clk.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		if r.cfg.Due != nil {
			r.cfg.Due(tick.Add(r.cfg.Interval))
		}
		select {
		case <-ctx.Done():
			return nil
		case tick = <-t.C():
		}
		if err := r.ReportOnce(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("send usage report", "err", err)
		}
	}
}

// ReportOnce builds a report from the latest reading and sends it. It
// does nothing before the eviction cycle has read anything.
func (r *Reporter) ReportOnce(ctx context.Context) error {
	s, pods, ok := r.cfg.Source.Latest()
	if !ok {
		return nil
	}
	rep := Build(s, pods, r.cfg.Detailer.PodDetails(ctx, pods))
	r.mu.Lock()
	r.latest = rep
	r.mu.Unlock()
	if r.cfg.API == nil {
		return nil
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("encode usage report: %w", err)
	}
	sent := r.clk.Now()
	resp, err := r.cfg.API.Do(ctx, http.MethodPost, StatsPath(r.cfg.NodeName), bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("post usage report: %w", err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNoContent:
		if r.cfg.Heard != nil {
			r.cfg.Heard(sent)
		}
	case http.StatusResetContent:
		if r.cfg.StatusWanted != nil {
			r.cfg.StatusWanted()
		}
	}
	return nil
}

// Latest returns the last report built (zero before the first).
func (r *Reporter) Latest() api.UsageReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest
}

// StatsPath is where a node's reports go.
func StatsPath(node string) string {
	return "/api/v1/skiff/nodes/" + url.PathEscape(node) + "/stats"
}

// Build turns a reading into a report: pure, for tests. Pods without a
// reading are left out; pods and containers are sorted by name.
func Build(s eviction.Summary, pods []*api.Pod, details map[string]eviction.PodDetail) api.UsageReport {
	rep := api.UsageReport{Time: s.Time.UTC(), Node: api.NodeUsage{
		CPUUsageNanos: s.CPUNanos, MemoryWorkingSet: nonNeg(s.Memory.WorkingSet), MemoryCapacity: nonNeg(s.Memory.Capacity),
		FsCapacity: nonNeg(s.NodeFS.Capacity), FsAvailable: nonNeg(s.NodeFS.Available),
	}}
	for _, p := range pods {
		ps, ok := s.Pods[p.UID]
		if !ok {
			continue
		}
		pu := api.PodUsage{Namespace: p.Namespace, Name: p.Name, UID: p.UID, CPUUsageNanos: ps.CPUNanos,
			MemoryWorkingSet: nonNeg(ps.MemoryWorkingSet), MemoryRSS: nonNeg(ps.MemoryRSS)}
		d := details[p.UID]
		pu.Network = d.Network
		for name, u := range d.Containers {
			pu.Containers = append(pu.Containers, api.ContainerUsage{Name: name, CPUUsageNanos: u.CPUNanos,
				MemoryWorkingSet: u.Memory.WorkingSet, MemoryRSS: u.Memory.RSS})
		}
		sort.Slice(pu.Containers, func(i, j int) bool { return pu.Containers[i].Name < pu.Containers[j].Name })
		rep.Pods = append(rep.Pods, pu)
	}
	sort.Slice(rep.Pods, func(i, j int) bool {
		if rep.Pods[i].Namespace != rep.Pods[j].Namespace {
			return rep.Pods[i].Namespace < rep.Pods[j].Namespace
		}
		return rep.Pods[i].Name < rep.Pods[j].Name
	})
	return rep
}

func nonNeg(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}
