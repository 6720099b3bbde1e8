package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/promtext"
)

// Config sizes one simulator run.
type Config struct {
	Bin       string // the skiff binary
	Dir       string // server data dir and agents' state go under it
	Agents    int
	Zones     int           // 0: 4
	Heartbeat time.Duration // 0: the agent's 10 s
	StartRate int           // agents started per second (0: 200)
	// Usage is each agent's usage report period, as the real agent's
	// reporter sends them (0: none; the agent's is 15 s).
	Usage time.Duration
	// KeepBeats: FleetConfig.KeepBeats.
	KeepBeats bool
	// Full: AgentConfig.Full (false: each agent holds its pod watch and
	// heartbeats only, as in every run before 2026-12-03).
	Full bool
	// PeerSets: AgentConfig.PeerSets.
	PeerSets bool
	// Settle is how long the fleet runs after the join before the steady
	// window starts (0: at once, as in the rounds before it existed).
	Settle time.Duration
	// CollectBetween runs the simulator's own collector to completion
	// before each measured phase, so that it does not collect inside one:
	// its heap is about 2.5 GB at GOGC=400, and a collection while the
	// box has no idle core stalled every simulated agent for 2–5 s.
	CollectBetween bool
	// HoldOwnGC keeps the simulator's collector from running inside a
	// measured phase after CollectBetween's collection, unless its memory
	// grows by HoldHeadroom (run.holdOwn).
	HoldOwnGC    bool
	HoldHeadroom int64
	// Window is the steady state measured (server CPU, RSS, heartbeats).
	Window time.Duration
	// Pods are bound directly (spec.nodeName) at BindRate a second, round
	// robin over the agents, to measure bind → agent delivery.
	Pods     int
	BindRate int
	// Replicas is the Deployment spread by zone over every node (0: as
	// many as agents; <0: none).
	Replicas int
	// Restarts is how many times the server is stopped and started
	// again, each time followed by one new pod bound to every agent to
	// check each stream came back.
	Restarts int
	// Cooldown is how long the fleet runs after the last phase before
	// the server is sampled once more (0: not): the RSS the server
	// comes back to once its bursts are over.
	Cooldown time.Duration
	// ServerPprof is the loopback host:port where the server serves
	// net/http/pprof (a -tags fleetprof build run with SKIFF_PPROF_ADDR),
	// read when a restart stalls; empty: only the simulator's own
	// goroutines are kept.
	ServerPprof string
	// SnapshotAt, when set, keeps both processes' goroutines (as a
	// stall does) this long after each restart's new process started,
	// if the restart is not over by then.
	SnapshotAt time.Duration
	// Timeout bounds each phase's wait (0: 10 minutes).
	Timeout time.Duration
	Logger  *slog.Logger
	// Progress, when set, gets a line per phase.
	Progress io.Writer
}

// Report is what a run measured. Durations are wall time on the machine
// the server and the simulator share.
type Report struct {
	Agents, Zones int
	// NodeSets and Snapshots count what the agents' Full connections
	// handed their sinks: node sets to the pod network, Service
	// snapshots to the proxy (0 without Config.Full).
	NodeSets, Snapshots int64

	JoinAll time.Duration // start → every agent registered and listing its pods
	Joined  Sample        // the server once all joined
	// JoinedMemory is where the server's memory was once all joined (nil
	// if its /metrics lacked the runtime's figures).
	JoinedMemory *ServerMemory

	Steady    Sample // over Window
	SteadyCPU float64
	// SteadyMemory is where the server's memory was at the window's end
	// (nil if its /metrics lacked the runtime's figures).
	SteadyMemory *ServerMemory
	// SteadyKeepAlives is the watch streams' heartbeats over the window.
	SteadyKeepAlives KeepAlives
	// SteadyReopens is the shared streams their agents ended over the
	// window (each one opened again at once: a watch on it ended, such
	// as the pod watch's rotation).
	SteadyReopens int
	// Tunnels is the server's skiff_agent_tunnels at the window's end.
	Tunnels int
	// WatchStreams are the server's open watch streams at the window's
	// end, shared (an agent's watches on one) and single; Watches the
	// watches they carry.
	SharedStreams, SingleStreams, Watches int
	Beats                                 int
	BeatP50                               time.Duration
	BeatP99                               time.Duration
	BeatMax                               time.Duration
	// ServerBeats and ServerBeatP99 are the server's own count and p99
	// (the upper bound of its histogram bucket) of heartbeat handling
	// over the window: from the handler's start to its answer, so the
	// difference to BeatP99 is time in the network, the HTTP/2 and TLS
	// layers of either side and the simulator's own scheduling.
	ServerBeats   int
	ServerBeatP99 time.Duration
	// Reports, ReportP50 and ReportP99: the usage reports over the
	// window (the server counts each as a heartbeat).
	Reports              int
	ReportP50, ReportP99 time.Duration
	// SchedP99 is the p99 of the server's goroutines' wait for a core
	// once runnable (Go's /sched/latencies) over the steady window, and
	// DeploySchedP99 over the Deployment's placement. A request, a watch
	// event or a write passes several such waits.
	SchedP99       time.Duration
	DeploySchedP99 time.Duration
	// SimSchedP99 is the same for the simulator's own goroutines over
	// the steady window: an agent's heartbeat is timed in here, so a
	// wait here lengthens every heartbeat it times.
	SimSchedP99 time.Duration
	// SlowBeats says where the heartbeats over SlowBeat spent their time.
	SlowBeats   string
	Pods        int
	DeliveryP50 time.Duration
	DeliveryP99 time.Duration
	DeliveryMax time.Duration
	PodsBindCPU float64
	Replicas    int
	DeployBound time.Duration // Deployment created → every replica bound
	// DeployAtAgents is Deployment created → the last replica reached
	// its agent, by the agents' own arrival times: every replica was
	// bound by then, whatever the admin watch (one stream filtering
	// every pod change, in a starved simulator) had shown yet.
	DeployAtAgents time.Duration
	DeployRunning  time.Duration // → every replica Running on the server
	DeployCPU      float64
	DeployP50      time.Duration // bind seen by a watcher → agent
	DeployP99      time.Duration
	ZoneCounts     map[string]int // replicas per zone
	// DeployStore is what the store did during the placement: each
	// transaction is an fsync, and on a busy server a wait for a core
	// after it.
	DeployStore StoreCounts

	NodeMetrics int // nodes with measured usage once the phases before the restart ran

	Restarts []RestartReport // one per restart, in order

	// AfterCooldown is the server Config.Cooldown after the last phase.
	AfterCooldown Sample
}

// Sample is the server process (and the machine) at one moment.
type Sample struct {
	ProcStats
	LoadAvg string // /proc/loadavg's first three fields
}

func (s Sample) String() string {
	return fmt.Sprintf("RSS %.0f MiB (peak %.0f MiB), %d fds (%d sockets), %d threads, load %s",
		float64(s.RSSKB)/1024, float64(s.HWMKB)/1024, s.FDs, s.Sockets, s.Threads, s.LoadAvg)
}

// LoadAvg is /proc/loadavg's first three fields ("?" when unreadable).
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func (c *Config) defaults() {
	if c.Zones <= 0 {
		c.Zones = 4
	}
	if c.StartRate == 0 {
		c.StartRate = 200
	}
	if c.Replicas == 0 {
		c.Replicas = c.Agents
	}
	if c.BindRate <= 0 {
		c.BindRate = 200
	}
	if c.HoldHeadroom <= 0 {
		c.HoldHeadroom = defaultHoldHeadroom
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// run is one Run in progress.
type run struct {
	cfg     Config
	srv     *Server
	admin   *client.Client
	fleet   *Fleet
	metrics *Metrics
	rep     Report
	seen    Seen
	own     ownGC
}

// progressSeen reports what the agents' Full connections have received.
func (r *run) progressSeen(when string) {
	if r.cfg.Full {
		r.progress("%s: the agents' Node watches handed over %d node sets (%d Nodes in all); service snapshots %d", when,
			r.seen.NodeSets.Load(), r.seen.NodesSeen.Load(), r.seen.Snapshots.Load())
	}
}

// Run starts a server on cfg.Dir and cfg.Agents simulated agents, and
// measures it through the phases: join, steady heartbeats, direct binds,
// a Deployment spread by zone, a restart. It stops everything before it
// returns.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg.defaults()
	r := &run{cfg: cfg, metrics: NewMetrics(), rep: Report{Agents: cfg.Agents, Zones: cfg.Zones}}
	srv, err := StartServer(cfg.Bin, filepath.Join(cfg.Dir, "server"), "", time.Minute)
	if err != nil {
		return r.rep, err
	}
	r.srv = srv
	defer srv.Kill()
	if r.admin, err = srv.Admin(); err != nil {
		return r.rep, err
	}
	ctx, cancel := context.WithCancel(ctx)
	start := time.Now()
	r.fleet = StartFleet(ctx, FleetConfig{Server: srv.URL, Token: srv.JoinToken, Agents: cfg.Agents, Zones: cfg.Zones,
		Dir: filepath.Join(cfg.Dir, "agents"), Heartbeat: cfg.Heartbeat, Usage: cfg.Usage, KeepBeats: cfg.KeepBeats, Full: cfg.Full, PeerSets: cfg.PeerSets, Seen: &r.seen, StartRate: cfg.StartRate, Logger: cfg.Logger, Metrics: r.metrics})
	defer func() {
		cancel()
		r.fleet.Wait()
	}()
	err = r.phases(ctx, start)
	r.releaseOwn()
	r.rep.NodeSets, r.rep.Snapshots = r.seen.NodeSets.Load(), r.seen.Snapshots.Load()
	return r.rep, err
}

// collectOwn runs the simulator's collector to completion before phase
// when Config.CollectBetween is set: between phases, where nothing is
// measured. The server keeps its own collector. Then it holds the
// collector for the phase (holdOwn). With collect false it only holds it
// (steady).
func (r *run) collectOwn(phase string, collect bool) {
	if !r.cfg.CollectBetween {
		return
	}
	r.releaseOwn()
	if collect {
		t := time.Now()
		runtime.GC()
		r.progress("the simulator's own collection before %s: %v", phase, time.Since(t).Round(time.Millisecond))
	} else {
		r.progress("the simulator's own collector held for %s, without a collection first", phase)
	}
	r.holdOwn(phase)
}

func (r *run) progress(format string, args ...any) {
	fmt.Fprintf(r.cfg.Progress, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func (r *run) sample() (Sample, error) {
	st, err := r.srv.Stats()
	return Sample{ProcStats: st, LoadAvg: LoadAvg()}, err
}

func (r *run) phases(ctx context.Context, start time.Time) error {
	cfg := r.cfg
	joined := func(a *Agent) bool { return a.Registered() && a.Synced() }
	// A line every 30 s while the fleet joins.
	pctx, stopProgress := context.WithCancel(ctx)
	go func() {
		tick := time.NewTicker(30 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-tick.C:
			}
			if smp, err := r.sample(); err == nil {
				r.progress("joining: %d of %d agents registered and listing; server %v", r.fleet.Count(joined), cfg.Agents, smp)
			}
		}
	}()
	err := r.fleet.WaitFor(ctx, "joined", joined, cfg.Timeout)
	stopProgress()
	if err != nil {
		return fmt.Errorf("%w\n%s", err, r.srv.LogTail())
	}
	r.rep.JoinAll = time.Since(start)
	if r.rep.Joined, err = r.sample(); err != nil {
		return err
	}
	r.progress("%d agents joined in %v; server %v", cfg.Agents, r.rep.JoinAll.Round(time.Millisecond), r.rep.Joined)
	if sr, err := r.serverHists(ctx); err == nil && sr.memOK {
		// One /metrics read, before the settle: a server's steady RSS
		// follows its join (docs/benchmarks.md, round thirty-eight), and
		// this says which part of it did.
		r.rep.JoinedMemory = &sr.mem
		r.progress("joined: server memory: %v", sr.mem)
	}
	r.progressSeen("joined")

	if cfg.Window > 0 {
		if err := r.steady(ctx); err != nil {
			return err
		}
	}
	if cfg.Pods > 0 {
		r.collectOwn("the direct binds", true)
		if err := r.binds(ctx); err != nil {
			return err
		}
	}
	if cfg.Replicas > 0 {
		r.collectOwn("the Deployment", true)
		if err := r.deployment(ctx); err != nil {
			return err
		}
	}
	if cfg.Usage > 0 {
		if err := r.nodeMetrics(ctx); err != nil {
			return err
		}
	}
	for n := 1; n <= cfg.Restarts; n++ {
		r.collectOwn(fmt.Sprintf("restart %d", n), true)
		if err := r.restart(ctx, n); err != nil {
			return err
		}
	}
	r.releaseOwn()
	if cfg.Cooldown > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.Cooldown):
		}
		s, err := r.sample()
		if err != nil {
			return err
		}
		r.rep.AfterCooldown = s
		r.progress("server %v after the last phase: %v", cfg.Cooldown, s)
	}
	return nil
}

// nodeMetrics counts the nodes the server has measured usage for
// (metrics.k8s.io NodeMetrics, as kubectl top nodes reads them): the
// agents' usage reports arrived and were taken.
func (r *run) nodeMetrics(ctx context.Context) error {
	resp, err := r.admin.Do(ctx, http.MethodGet, "/apis/metrics.k8s.io/v1beta1/nodes", nil)
	if err != nil {
		return fmt.Errorf("node metrics: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return fmt.Errorf("node metrics: %w", err)
	}
	r.rep.NodeMetrics = len(list.Items)
	r.progress("usage: the server has measured usage for %d of %d nodes", r.rep.NodeMetrics, r.cfg.Agents)
	return nil
}

// steady measures the server while the fleet only heartbeats.
//
// No collection of the simulator's own precedes it: one stalls every
// simulated agent at once for 3-5 s, and each agent schedules its next
// beat from the last one heard, so the beats due in the stall go out
// together and bunch again every 10 s, give or take the jitter's second,
// for minutes. Ten thousand real agents never stall together. With the
// collection right before the window, its first 20 s held most of the
// window's slow heartbeats (39 of 41 in round thirty-four's run AD, 77 of
// 92 in round thirty-three's AC); moved before the 20 s settle, a bunch
// still came 30 s after it (AE). So the simulator's collector is held
// from the settle on as it is, its heap uncollected.
func (r *run) steady(ctx context.Context) error {
	r.collectOwn("the settle and the steady window", false)
	if r.cfg.Settle > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.cfg.Settle):
		}
	}
	r.metrics.StartWindow(time.Now())
	a, err := r.sample()
	if err != nil {
		return err
	}
	before, err := r.serverHists(ctx)
	if err != nil {
		return err
	}
	simBefore := ownSchedLatency()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(r.cfg.Window):
	}
	b, err := r.sample()
	if err != nil {
		return err
	}
	beats, reports := r.metrics.TakeHeartbeats(), r.metrics.TakeReports()
	r.rep.Reports, r.rep.ReportP50, r.rep.ReportP99 = len(reports), Percentile(reports, 0.5), Percentile(reports, 0.99)
	slow, patches := r.metrics.TakeSlowBeats()
	r.rep.SlowBeats = SlowBeatsSummary(slow, len(beats), patches)
	if len(slow) > 0 {
		r.progress("steady: the seconds with the most slow heartbeats (by when they began): %s", SlowBeatSeconds(slow, 20))
	}
	simSched := ownSchedLatency().Since(simBefore)
	after, err := r.serverHists(ctx)
	if err != nil {
		return err
	}
	open := after.open
	r.rep.Tunnels, r.rep.SharedStreams, r.rep.SingleStreams, r.rep.Watches = open[0], open[1], open[2], open[3]
	r.rep.SteadyKeepAlives = after.keep.Since(before.keep)
	r.rep.SteadyReopens = int(after.clientEnds - before.clientEnds)
	if after.memOK {
		r.rep.SteadyMemory = &after.mem
	}
	r.rep.SimSchedP99 = simSched.Quantile(0.99)
	hb := after.beats.Since(before.beats)
	r.rep.ServerBeats, r.rep.ServerBeatP99 = int(hb.Total()), hb.Quantile(0.99)
	serverSched := after.sched.Since(before.sched)
	r.rep.SchedP99 = serverSched.Quantile(0.99)
	r.rep.Steady, r.rep.SteadyCPU = b, CPUPercent(a.ProcStats, b.ProcStats)
	r.rep.Beats, r.rep.BeatP50, r.rep.BeatP99 = len(beats), Percentile(beats, 0.5), Percentile(beats, 0.99)
	if len(beats) > 0 {
		r.rep.BeatMax = beats[len(beats)-1]
	}
	r.progress("steady %v: server CPU %.1f%% of a core, %v; %d heartbeats p50 %v p99 %v max %v; in the server's handler: %d, p99 ≤ %v; goroutines' wait for a core p99 ≤ %v in the server, ≤ %v in this simulator", r.cfg.Window, r.rep.SteadyCPU, b,
		len(beats), r.rep.BeatP50, r.rep.BeatP99, r.rep.BeatMax, r.rep.ServerBeats, r.rep.ServerBeatP99, r.rep.SchedP99, r.rep.SimSchedP99)
	r.progressSeen("steady")
	if m := r.rep.SteadyMemory; m != nil {
		r.progress("steady: server memory at the window's end: %v", *m)
	}
	r.progress("steady: watch stream keep-alives over the window: %.0f sent, %.0f skipped; shared streams ended by their agents: %d", r.rep.SteadyKeepAlives.Sent, r.rep.SteadyKeepAlives.Skipped, r.rep.SteadyReopens)
	r.progress("steady: %s; %d usage reports (each counts as a heartbeat) p50 %v p99 %v", r.rep.SlowBeats, r.rep.Reports, r.rep.ReportP50, r.rep.ReportP99)
	r.progress("steady: goroutines' wait for a core p99.9 ≤ %v, p99.99 ≤ %v in the server (%.0f waits); p99.9 ≤ %v, p99.99 ≤ %v in this simulator (%.0f)",
		serverSched.Quantile(0.999), serverSched.Quantile(0.9999), serverSched.Total(), simSched.Quantile(0.999), simSched.Quantile(0.9999), simSched.Total())
	return nil
}

// ownSchedLatency is this process's scheduling-latency histogram.
func ownSchedLatency() Buckets {
	h, _ := promtext.RuntimeHistogram("/sched/latencies:seconds", promtext.SchedLatencyBounds)
	b := Buckets{Le: append(slices.Clone(h.Bounds), math.Inf(1))}
	for _, c := range h.Cumulative {
		b.Count = append(b.Count, float64(c))
	}
	b.Count = append(b.Count, float64(h.Count))
	return b
}

// serverMetrics reads the server's /metrics.
func (r *run) serverMetrics(ctx context.Context) ([]byte, error) {
	resp, err := r.admin.Do(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("read the server's metrics: %w", err)
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read the server's metrics: %w", err)
	}
	return text, nil
}

// serverReading is what the simulator reads from the server's /metrics
// around a measured phase.
type serverReading struct {
	// beats is the server's heartbeat handling times, sched its
	// goroutines' scheduling latency.
	beats, sched Buckets
	// open is the server's open tunnels, watch streams (shared, single)
	// and watches.
	open [4]int
	// mem is where the server's memory was; memOK is false when the
	// runtime's figures were missing.
	mem   ServerMemory
	memOK bool
	keep  KeepAlives
	store StoreCounts
	// clientEnds is the shared streams ended by their client.
	clientEnds float64
}

// serverHists reads a serverReading: one read of /metrics, which at
// 10,000 nodes costs the server about 0.2 CPU-s (round thirty-eight).
func (r *run) serverHists(ctx context.Context) (serverReading, error) {
	var sr serverReading
	text, err := r.serverMetrics(ctx)
	if err != nil {
		return sr, err
	}
	for i, name := range []string{"skiff_agent_tunnels", `skiff_watch_streams{kind="shared"}`, `skiff_watch_streams{kind="single"}`, "skiff_watches"} {
		v, _ := ParseCounter(text, name)
		sr.open[i] = int(v)
	}
	sr.beats = ParseBuckets(text, "skiff_http_request_duration_seconds", `resource="heartbeat"`)
	sr.sched = ParseBuckets(text, "skiff_go_sched_latency_seconds")
	sr.mem, sr.memOK = ParseServerMemory(text)
	sr.keep = ParseKeepAlives(text)
	sr.store = parseStoreCounts(text)
	sr.clientEnds = ParseSample(text, "skiff_watch_stream_ends_total", `reason="client"`)
	return sr, nil
}

// bindPod creates pod ns/name bound to node and returns when it sent
// the request.
func (r *run) bindPod(ctx context.Context, name, node string) (time.Time, error) {
	p := &api.Pod{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "fleet-bind"}},
		Spec: api.PodSpec{NodeName: node, Containers: []api.Container{{Name: "web", Image: "nginx:1.27"}}}}
	bo := backoff.Backoff{Min: time.Second, Max: 10 * time.Second}
	for attempt := 1; ; attempt++ {
		at := time.Now()
		_, err := r.admin.Create(ctx, p)
		if err == nil {
			return at, nil
		}
		wait, ok := retryAfter(err)
		if !ok || attempt >= maxBindAttempts {
			return at, fmt.Errorf("bind %s to %s (attempt %d): %w", name, node, attempt, err)
		}
		// The server shed the request (429): wait what it asked, or
		// the back-off's step if that is longer, then send it again.
		if !clock.Sleep(ctx, clock.Real{}, max(wait, bo.Next())) {
			return at, ctx.Err()
		}
	}
}

// maxBindAttempts bounds the retries of one shed create.
const maxBindAttempts = 10

// retryAfter reports whether err is a 429 answer, and the wait it asked
// for (0 when it named none).
func retryAfter(err error) (time.Duration, bool) {
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status.Reason != api.StatusReasonTooManyRequests {
		return 0, false
	}
	if d := se.Status.Details; d != nil {
		return time.Duration(d.RetryAfterSeconds) * time.Second, true
	}
	return 0, true
}

// bindAll creates n pods named prefix-i bound round robin, at rate a
// second over workers, and returns when each was sent.
func (r *run) bindAll(ctx context.Context, prefix string, n, rate int) ([]time.Time, error) {
	sent := make([]time.Time, n)
	var next atomic.Int64
	var first error
	var mu sync.Mutex
	interval := time.Second / time.Duration(rate)
	begin := time.Now()
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if d := time.Until(begin.Add(time.Duration(i) * interval)); d > 0 {
					time.Sleep(d) // pacing the load, not waiting for an outcome
				}
				at, err := r.bindPod(ctx, fmt.Sprintf("%s-%05d", prefix, i), NodeName(i%r.cfg.Agents))
				sent[i] = at
				if err != nil {
					mu.Lock()
					first = cmp(first, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return sent, first
}

func cmp(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// waitDelivered waits until every pod prefix-i reached its agent.
func (r *run) waitDelivered(ctx context.Context, prefix string, n int) error {
	deadline := time.Now().Add(r.cfg.Timeout)
	for i := 0; i < n; {
		if _, ok := r.metrics.DeliveredAt(fmt.Sprintf("default/%s-%05d", prefix, i)); ok {
			i++
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pod %s-%05d not at its agent after %v", prefix, i, r.cfg.Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// binds measures bind → agent delivery of pods created with nodeName.
func (r *run) binds(ctx context.Context) error {
	a, err := r.sample()
	if err != nil {
		return err
	}
	sent, err := r.bindAll(ctx, "bind", r.cfg.Pods, r.cfg.BindRate)
	if err != nil {
		return err
	}
	if err := r.waitDelivered(ctx, "bind", r.cfg.Pods); err != nil {
		return err
	}
	b, err := r.sample()
	if err != nil {
		return err
	}
	lat := make([]time.Duration, len(sent))
	for i, at := range sent {
		got, _ := r.metrics.DeliveredAt(fmt.Sprintf("default/bind-%05d", i))
		lat[i] = got.Sub(at)
	}
	sortDurations(lat)
	r.rep.Pods, r.rep.PodsBindCPU = r.cfg.Pods, CPUPercent(a.ProcStats, b.ProcStats)
	r.rep.DeliveryP50, r.rep.DeliveryP99, r.rep.DeliveryMax = Percentile(lat, 0.5), Percentile(lat, 0.99), lat[len(lat)-1]
	r.progress("%d pods bound at %d/s: delivery p50 %v p99 %v max %v; server CPU %.1f%%, %v", r.cfg.Pods, r.cfg.BindRate,
		r.rep.DeliveryP50, r.rep.DeliveryP99, r.rep.DeliveryMax, r.rep.PodsBindCPU, b)
	return nil
}

func sortDurations(d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
}

// Summary is the report as text, one figure a line.
func (r Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "agents %d over %d zones, all joined in %v\n", r.Agents, r.Zones, r.JoinAll.Round(time.Millisecond))
	fmt.Fprintf(&b, "server after join: %v\n", r.Joined)
	if r.JoinedMemory != nil {
		fmt.Fprintf(&b, "server memory after join: %v\n", *r.JoinedMemory)
	}
	if r.NodeSets > 0 || r.Snapshots > 0 {
		fmt.Fprintf(&b, "the agents' Node watches handed over %d node sets, their Service watchers %d snapshots\n", r.NodeSets, r.Snapshots)
	}
	if r.Beats > 0 {
		fmt.Fprintf(&b, "steady: server CPU %.1f%% of a core, %v\n", r.SteadyCPU, r.Steady)
		fmt.Fprintf(&b, "steady: RSS per agent %.0f KiB, %d agent tunnels open\n", float64(r.Steady.RSSKB)/float64(max(r.Agents, 1)), r.Tunnels)
		fmt.Fprintf(&b, "steady: %d watches on %d shared and %d single watch streams; keep-alives %.0f sent, %.0f skipped; %d shared streams ended by their agents\n", r.Watches, r.SharedStreams, r.SingleStreams, r.SteadyKeepAlives.Sent, r.SteadyKeepAlives.Skipped, r.SteadyReopens)
		if r.SteadyMemory != nil {
			fmt.Fprintf(&b, "steady: server memory at the window's end: %v\n", *r.SteadyMemory)
		}
		fmt.Fprintf(&b, "heartbeats: %d, p50 %v, p99 %v, max %v; in the server's handler: %d, p99 ≤ %v\n", r.Beats, r.BeatP50, r.BeatP99, r.BeatMax, r.ServerBeats, r.ServerBeatP99)
		fmt.Fprintf(&b, "steady: %s\n", r.SlowBeats)
		fmt.Fprintf(&b, "steady: goroutines' wait for a core p99 ≤ %v in the server, ≤ %v in the simulator\n", r.SchedP99, r.SimSchedP99)
	}
	if r.Pods > 0 {
		fmt.Fprintf(&b, "direct binds: %d, bind→agent p50 %v, p99 %v, max %v, server CPU %.1f%%\n", r.Pods, r.DeliveryP50, r.DeliveryP99, r.DeliveryMax, r.PodsBindCPU)
	}
	if r.Replicas > 0 {
		fmt.Fprintf(&b, "deployment of %d spread by zone: every replica at its agent %v; admin watch: bound %v, Running %v; bind→agent p50 %v p99 %v; per zone %v; server CPU %.1f%%, goroutines' wait for a core p99 ≤ %v; the store's %v\n",
			r.Replicas, r.DeployAtAgents.Round(time.Millisecond), r.DeployBound.Round(time.Millisecond), r.DeployRunning.Round(time.Millisecond), r.DeployP50, r.DeployP99, r.ZoneCounts, r.DeployCPU, r.DeploySchedP99, r.DeployStore)
	}
	if r.NodeMetrics > 0 {
		fmt.Fprintf(&b, "usage reports: the server measured %d of %d nodes\n", r.NodeMetrics, r.Agents)
	}
	for i, rr := range r.Restarts {
		fmt.Fprintf(&b, "restart %d: %v\n", i+1, rr)
	}
	if r.AfterCooldown.RSSKB > 0 {
		fmt.Fprintf(&b, "after the cooldown: %v\n", r.AfterCooldown)
	}
	return b.String()
}
