package fleet

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/eviction"
	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/agent/status"
	"github.com/skiffhq/skiff/agent/usage"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// LabelZone is the well-known zone label each simulated Node carries.
const LabelZone = "topology.kubernetes.io/zone"

// AgentConfig configures one simulated agent.
type AgentConfig struct {
	Server    string // https://127.0.0.1:port
	Token     string // join token
	Name      string // node name
	Zone      string // the Node's LabelZone
	Dir       string // the agent's state directory (credentials)
	SourceIP  net.IP // every connection is dialled from here (loopback)
	Heartbeat time.Duration
	// Usage is how often the agent's usage reporter posts a report of
	// its simulated node and pods (0: never).
	Usage time.Duration
	// KeepBeats: the registrar is not told of the reports the server
	// took, so it beats every period (FleetConfig.KeepBeats).
	KeepBeats bool
	// Full runs the real agent's other server connections as well:
	// the Node watch, the Service and EndpointSlice watches and the
	// tunnel (fullLoops). Without it an agent holds its pod watch only.
	Full bool
	// PeerSets: the Full agent follows the peer feed with the agent's
	// network.PeerWatcher, keeping the whole set; else with feedReader.
	PeerSets bool
	// Seen counts what the Full connections received (nil: nothing).
	Seen    *Seen
	Clock   clock.Clock
	Logger  *slog.Logger
	Metrics *Metrics
}

// Agent is one simulated agent: the real agent's join, registrar, API
// source and status manager, with a kubelet that answers every pod with
// Running at once.
type Agent struct {
	cfg  AgentConfig
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	synced   atomic.Bool  // the assignment stream's first list arrived
	lastBeat atomic.Int64 // unix nanos of the last heartbeat (or usage report) that worked

	mu      sync.Mutex
	pods    map[string]*api.Pod // by UID: the pods the API source gave
	manager *status.Manager
	reg     *node.Registrar
}

// NewAgent returns an agent for cfg; start it with Run.
func NewAgent(cfg AgentConfig) *Agent {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Clock = clock.Or(cfg.Clock)
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if cfg.SourceIP != nil {
		d.LocalAddr = &net.TCPAddr{IP: cfg.SourceIP}
	}
	return &Agent{cfg: cfg, dial: d.DialContext, pods: map[string]*api.Pod{}}
}

// Name is the agent's node name.
func (a *Agent) Name() string { return a.cfg.Name }

// Registered reports whether the Node has been registered.
func (a *Agent) Registered() bool {
	a.mu.Lock()
	r := a.reg
	a.mu.Unlock()
	return r != nil && r.Registered()
}

// Synced reports whether the assignment stream has listed once.
func (a *Agent) Synced() bool { return a.synced.Load() }

// LastBeat is when a heartbeat, or a usage report (which the server
// counts as one), last worked (zero if never).
func (a *Agent) LastBeat() time.Time {
	n := a.lastBeat.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Pods is how many pods the agent has been given and not lost.
func (a *Agent) Pods() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pods)
}

// Run joins (retrying with the agent's back-off while the server is
// away) and then runs the registrar, the status manager and the API
// source until ctx ends; it returns ctx's error, or the first failure to
// set up.
func (a *Agent) Run(parent context.Context) error {
	ctx, stop := ownContext(parent)
	defer stop()
	log := a.cfg.Logger.With("node", a.cfg.Name)
	cred, err := node.JoinRetry(ctx, node.JoinConfig{Server: a.cfg.Server, Token: a.cfg.Token, NodeName: a.cfg.Name, Dir: a.cfg.Dir, DialContext: a.dial}, a.cfg.Clock, log)
	if err != nil {
		return err
	}
	ccfg := cred.ClientConfig()
	ccfg.DialContext = a.dial
	c, err := client.New(ccfg)
	if err != nil {
		return fmt.Errorf("%s: client: %w", a.cfg.Name, err)
	}
	var src *config.APISource // set below, before any loop runs
	reg := node.NewRegistrar(node.Config{
		API: &timedAPI{Client: c, agent: a}, NodeName: a.cfg.Name, Labels: map[string]string{LabelZone: a.cfg.Zone},
		MaxPods: 110, Info: a.info, Runtime: simRuntime{}, Heartbeat: a.cfg.Heartbeat, Clock: a.cfg.Clock, Logger: log,
		// As the real agent: heard from the server after a silence, the
		// pod stream resyncs.
		Recovered: func(since time.Time) { src.Resync(since) },
	})
	sm, err := status.New(status.Config{Client: c, NodeName: a.cfg.Name, Clock: a.cfg.Clock, Logger: log})
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.manager, a.reg = sm, reg
	a.mu.Unlock()
	// As the real agent (agent.online): the watches share one stream.
	mux := client.NewWatchMux(c, a.cfg.Clock)
	watches := client.MuxedWatches{Client: c, Mux: mux}
	src, err = config.NewAPISource(config.APISourceConfig{Client: watches, NodeName: a.cfg.Name, Clock: a.cfg.Clock, Logger: log}, a)
	if err != nil {
		return err
	}
	loops := []func(context.Context) error{reg.Run, sm.Run, src.Run, func(ctx context.Context) error {
		mux.Run(ctx)
		return ctx.Err()
	}}
	if a.cfg.Usage > 0 {
		// The real agent's reporter (build the report, POST it) over a
		// simulated reading of the node and its pods.
		ucfg := usage.Config{NodeName: a.cfg.Name, Source: a, Detailer: a, API: &timedAPI{Client: c, agent: a}, Interval: a.cfg.Usage, Clock: a.cfg.Clock, Logger: log}
		if !a.cfg.KeepBeats {
			ucfg.Heard, ucfg.StatusWanted, ucfg.Due = reg.Heard, reg.StatusWanted, reg.ReportDue
		}
		rep, err := usage.New(ucfg)
		if err != nil {
			return err
		}
		loops = append(loops, rep.Run)
	}
	if a.cfg.Full {
		loops = append(loops, a.fullLoops(c, watches, cred)...)
	}
	var wg sync.WaitGroup
	for _, run := range loops {
		wg.Go(func() {
			if err := run(ctx); err != nil && ctx.Err() == nil {
				log.Error("fleet agent loop", "err", err)
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// ownContext returns a context of the agent's own, ended when parent
// ends, as a real agent's process has its own: every request and
// timeout an agent starts registers with its context's lock, and 10,000
// agents under the fleet's one context queued on that one lock. At a
// restart's reconnect, when every agent's requests start at once, the
// simulator's goroutines held thousands of waits on it (a convoy: each
// hand-over waits for a core) that no real fleet has.
func ownContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	unhook := context.AfterFunc(parent, func() { cancel(context.Cause(parent)) })
	return ctx, func() {
		unhook()
		cancel(context.Canceled)
	}
}

// info is the simulated machine: 4 CPUs, 8 GiB, 64 GiB of disk.
func (a *Agent) info(context.Context) (node.SystemInfo, error) {
	return node.SystemInfo{Hostname: a.cfg.Name, CPUs: 4, MemoryBytes: 8 << 30, DiskBytes: 64 << 30, Kernel: "6.1.0-fleet",
		OSImage: "skiff fleet simulator", OS: "linux", Arch: "amd64", MachineID: a.cfg.Name, BootID: a.cfg.Name,
		IPs: []string{a.hostIP()}}, nil
}

func (a *Agent) hostIP() string {
	if a.cfg.SourceIP != nil {
		return a.cfg.SourceIP.String()
	}
	return "127.0.0.1"
}

// Latest is the simulated machine's reading for the usage reporter
// (usage.Source): a node busy at a fifth of a core with 1 GiB in use, and
// each pod at a fiftieth of a core with 16 MiB.
func (a *Agent) Latest() (eviction.Summary, []*api.Pod, bool) {
	now := a.cfg.Clock.Now()
	up := uint64(now.UnixNano()) % (1 << 50)
	a.mu.Lock()
	pods := make([]*api.Pod, 0, len(a.pods))
	stats := make(map[string]eviction.PodStats, len(a.pods))
	for uid, p := range a.pods {
		pods = append(pods, p)
		stats[uid] = eviction.PodStats{CPUNanos: up / 50, MemoryWorkingSet: 16 << 20, MemoryRSS: 15 << 20}
	}
	a.mu.Unlock()
	return eviction.Summary{Time: now, CPUNanos: up / 5, Memory: eviction.MemoryStats{Capacity: 8 << 30, WorkingSet: 1 << 30},
		NodeFS: eviction.FsStats{Capacity: 64 << 30, Available: 48 << 30}, Pods: stats}, pods, true
}

// PodDetails gives each pod's containers the pod's own figures
// (usage.Detailer).
func (a *Agent) PodDetails(_ context.Context, pods []*api.Pod) map[string]eviction.PodDetail {
	out := make(map[string]eviction.PodDetail, len(pods))
	for _, p := range pods {
		d := eviction.PodDetail{Containers: map[string]cgroups.Usage{}}
		for _, c := range p.Spec.Containers {
			d.Containers[c.Name] = cgroups.Usage{CPUNanos: uint64(a.cfg.Clock.Now().UnixNano()) % (1 << 50) / 50,
				Memory: cgroups.MemoryStats{Usage: 16 << 20, WorkingSet: 16 << 20, RSS: 15 << 20}}
		}
		out[p.UID] = d
	}
	return out
}

// simRuntime is a container runtime that is always up.
type simRuntime struct{}

func (simRuntime) Version(context.Context) (string, error) { return "fleetsim://1.0", nil }
func (simRuntime) Status(context.Context) error            { return nil }

// timedAPI is the node's client, timing the heartbeats the registrar
// sends (the lightweight call, or the status patch) and the usage
// reports, which the server counts as heartbeats.
type timedAPI struct {
	*client.Client
	agent *Agent
}

func (t *timedAPI) Do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	if method == http.MethodPost && strings.HasSuffix(path, "/stats") {
		// A usage report the server took counts as a heartbeat.
		start := time.Now()
		resp, err := t.Client.Do(ctx, method, path, body)
		if err == nil {
			t.agent.lastBeat.Store(time.Now().UnixNano())
			if t.agent.cfg.Metrics != nil {
				t.agent.cfg.Metrics.Report(start, time.Since(start))
			}
		}
		return resp, err
	}
	if method != http.MethodPost || !strings.HasSuffix(path, "/heartbeat") {
		return t.Client.Do(ctx, method, path, body)
	}
	tr := newBeatTracer()
	resp, err := t.Client.Do(httptrace.WithClientTrace(ctx, tr.trace()), method, path, body)
	if err == nil {
		t.agent.beat(tr.done(false))
	}
	return resp, err
}

func (t *timedAPI) PatchStatus(ctx context.Context, res api.ResourceInfo, ns, name, patchType string, body []byte) (api.Object, error) {
	tr := newBeatTracer()
	o, err := t.Client.PatchStatus(httptrace.WithClientTrace(ctx, tr.trace()), res, ns, name, patchType, body)
	if err == nil {
		t.agent.beat(tr.done(true))
	}
	return o, err
}

// beatTracer times one heartbeat's phases (httptrace calls it from the
// transport's goroutines).
type beatTracer struct {
	start                   time.Time
	gotConn, wrote, firstAt atomic.Int64 // unix nanos, 0 until seen
}

func newBeatTracer() *beatTracer { return &beatTracer{start: time.Now()} }

func (b *beatTracer) trace() *httptrace.ClientTrace {
	now := func(at *atomic.Int64) { at.CompareAndSwap(0, time.Now().UnixNano()) }
	return &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { now(&b.gotConn) },
		WroteRequest:         func(httptrace.WroteRequestInfo) { now(&b.wrote) },
		GotFirstResponseByte: func() { now(&b.firstAt) },
	}
}

// done is the trace of a call that ended now. A phase not seen takes
// none of the time (the next one's start is the last seen).
func (b *beatTracer) done(patch bool) BeatTrace {
	end := time.Now()
	last := b.start
	phase := func(at *atomic.Int64) time.Duration {
		n := at.Load()
		if n == 0 {
			return 0
		}
		t := time.Unix(0, n)
		d := t.Sub(last)
		last = t
		return max(d, 0)
	}
	tr := BeatTrace{Start: b.start, Total: end.Sub(b.start), Patch: patch}
	tr.Conn, tr.Write, tr.Answer = phase(&b.gotConn), phase(&b.wrote), phase(&b.firstAt)
	tr.Rest = max(end.Sub(last), 0)
	return tr
}

// beat records a heartbeat that worked.
func (a *Agent) beat(t BeatTrace) {
	a.lastBeat.Store(time.Now().UnixNano())
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.Heartbeat(t)
	}
}

// Set is the API source's whole state (config.Sink): new pods are
// started, those gone are forgotten.
func (a *Agent) Set(_ context.Context, _ string, pods []*api.Pod) error {
	keep := make(map[string]bool, len(pods))
	for _, p := range pods {
		keep[p.UID] = true
		a.upsert(p)
	}
	a.mu.Lock()
	var gone []string
	for uid := range a.pods {
		if !keep[uid] {
			gone = append(gone, uid)
			delete(a.pods, uid)
		}
	}
	sm := a.manager
	a.mu.Unlock()
	for _, uid := range gone {
		sm.RemovePod(uid)
	}
	a.synced.Store(true)
	return nil
}

// Upsert is a change to some pods (config.Sink).
func (a *Agent) Upsert(_ context.Context, _ string, pods ...*api.Pod) error {
	for _, p := range pods {
		a.upsert(p)
	}
	return nil
}

// Remove is pods gone from the node (config.Sink).
func (a *Agent) Remove(_ context.Context, _ string, pods ...*api.Pod) error {
	a.mu.Lock()
	sm := a.manager
	for _, p := range pods {
		delete(a.pods, p.UID)
	}
	a.mu.Unlock()
	for _, p := range pods {
		sm.RemovePod(p.UID)
	}
	return nil
}

// upsert is the simulated kubelet: a new pod is Running at once; a pod
// being deleted has its containers stopped and its deletion confirmed.
func (a *Agent) upsert(p *api.Pod) {
	now := time.Now()
	a.mu.Lock()
	_, known := a.pods[p.UID]
	if p.DeletionTimestamp == nil {
		a.pods[p.UID] = p
	}
	sm := a.manager
	a.mu.Unlock()
	if p.DeletionTimestamp != nil {
		sm.SetPodStatus(p, stoppedStatus(p, now))
		sm.PodTerminated(p)
		return
	}
	if known {
		return
	}
	if a.cfg.Metrics != nil {
		a.cfg.Metrics.Delivered(p.Namespace+"/"+p.Name, now)
	}
	sm.SetPodStatus(p, runningStatus(p, a.hostIP(), now))
}

// runningStatus is pod p with every container running and ready.
func runningStatus(p *api.Pod, hostIP string, now time.Time) api.PodStatus {
	t := api.NewTime(now)
	st := api.PodStatus{Phase: api.PodRunning, HostIP: hostIP, PodIP: hostIP, PodIPs: []api.PodIP{{IP: hostIP}}, StartTime: &t, QOSClass: p.Status.QOSClass}
	for _, c := range []string{"PodScheduled", "Initialized", "ContainersReady", "Ready"} {
		st.Conditions = append(st.Conditions, api.PodCondition{Type: c, Status: api.ConditionTrue, LastTransitionTime: t})
	}
	started := true
	for _, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, api.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "fleetsim://" + c.Image,
			ContainerID: "fleetsim://" + p.UID + "/" + c.Name, Ready: true, Started: &started,
			State: api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: t}}})
	}
	return st
}

// stoppedStatus is pod p with every container stopped by the kubelet.
func stoppedStatus(p *api.Pod, now time.Time) api.PodStatus {
	st := runningStatus(p, "", now)
	st.HostIP, st.PodIP, st.PodIPs = p.Status.HostIP, p.Status.PodIP, p.Status.PodIPs
	t := api.NewTime(now)
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		cs.Ready, cs.Started = false, nil
		cs.State = api.ContainerState{Terminated: &api.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: t, FinishedAt: t}}
	}
	for i := range st.Conditions {
		if c := &st.Conditions[i]; c.Type == "Ready" || c.Type == "ContainersReady" {
			c.Status = api.ConditionFalse
		}
	}
	return st
}
