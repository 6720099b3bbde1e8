package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/prober"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// StatusManager takes the pod statuses the agent computes to the server.
// agent/status implements it.
type StatusManager interface {
	// SetPodStatus records pod's latest status; it returns at once and
	// writes are coalesced.
	SetPodStatus(pod *api.Pod, status api.PodStatus)
	// PodTerminated is called once, when every container of pod has
	// stopped; the manager may then confirm a graceful API deletion.
	PodTerminated(pod *api.Pod)
	// RemovePod forgets pod uid (its source removed it and the agent has
	// cleaned it up).
	RemovePod(uid string)
}

// ObjectGetter reads the secrets and config maps pods use. Implementations
// return an error wrapping volumes.ErrObjectNotFound for a missing object.
type ObjectGetter interface {
	GetSecret(ctx context.Context, ns, name string) (*api.Secret, error)
	GetConfigMap(ctx context.Context, ns, name string) (*api.ConfigMap, error)
}

// ProbeResult says a probe's verdict on a container changed; the kubelet
// syncs the pod, which reads the verdicts from Config.Prober.
type ProbeResult struct {
	PodUID    string
	Container string
}

// Network sets up and tears down pods' networks; agent/network's Manager
// is one. The kubelet calls SetUpPod after it created a pod's sandbox
// (and again while PodIP is "", so a failed set-up is retried), and
// TearDownPod before it removes the sandbox. If it also has
// Reconcile(ctx, live []string) error, housekeeping calls that with every
// pod the agent still knows.
type Network interface {
	SetUpPod(ctx context.Context, podUID, netnsPath string, pod *api.Pod) (ip string, err error)
	TearDownPod(ctx context.Context, podUID string) error
	PodIP(uid string) string
}

// networkReconciler is the optional capability of a Network.
type networkReconciler interface {
	Reconcile(ctx context.Context, live []string) error
}

// Prober runs the containers' probes; agent/prober's Manager is one. The
// kubelet tells it each pod's running app containers at every sync, reads
// readiness for the containers' ready and the pod's Ready condition, and
// restarts a container whose liveness (or startup) probe failed.
type Prober interface {
	UpdatePod(pod *api.Pod, running []prober.Container)
	RemovePod(uid string)
	Ready(uid, container, containerID string) bool
	Started(uid, container, containerID string) bool
	LivenessFailed(uid, container, containerID string) bool
}

// Config wires a Kubelet. NodeName, PodsDir, Runtime and Status are
// required; the rest has defaults.
type Config struct {
	NodeName string
	// PodsDir is <data-dir>/agent/pods: pod directories with volumes and
	// container logs.
	PodsDir string
	Runtime runtime.Runtime
	Status  StatusManager
	Objects ObjectGetter
	// Events receives the pod events the kubelet emits (Created, Started,
	// Killing, BackOff, Failed); nil drops them.
	Events EventRecorder
	Clock  clock.Clock  // default clock.Real
	Logger *slog.Logger // default: discard
	// HostIP returns the node's IP (status.hostIP; the pod IP of
	// hostNetwork pods).
	HostIP func() string
	// PodIP returns the IP of pod uid's network namespace, "" if none.
	PodIP func(uid string) string
	// SourcesReady is true once every config source has delivered its
	// first state; until then housekeeping kills nothing. Default: true.
	SourcesReady func() bool
	// ProbeResults triggers syncs of the pods it names (may be nil).
	ProbeResults <-chan ProbeResult
	// Network gives pods that are not hostNetwork their network (nil:
	// none; pods get only loopback). When PodIP is nil, Network.PodIP is
	// used.
	Network Network
	// Prober runs probes (nil: none; running containers are ready).
	Prober Prober
	// ResolvConf is the host file pods' /etc/resolv.conf is made from
	// [/etc/resolv.conf].
	ResolvConf string
	// ClusterDNS is the cluster DNS address pods with dnsPolicy
	// ClusterFirst use ("": they use the host's resolvers, as Default);
	// ClusterDomain its domain [cluster.local].
	ClusterDNS    string
	ClusterDomain string
	// Allocatable stands in for unset limits in resourceFieldRef env.
	Allocatable api.ResourceList

	// Periods; zero means the default in brackets.
	SyncPeriod         time.Duration // due pods are checked [1s]
	HousekeepingPeriod time.Duration // [2s]
	RelistPeriod       time.Duration // PLEG relist [1s]
	ResyncInterval     time.Duration // a healthy pod is resynced [1m]
	ErrorRetry         time.Duration // a failed sync is retried [10s]
	// NetworkResync bounds how long housekeeping goes without calling
	// the Network's Reconcile while the set of live pods stays the same
	// (Reconcile also repairs the node's bridge, nftables table and
	// overlay) [30s]; a changed set, or a failed Reconcile, calls it at
	// the next housekeeping.
	NetworkResync time.Duration
	// MaxLogSize caps a container log file; beyond it the file is copied
	// to "<file>.1" and truncated [10 MiB].
	MaxLogSize int64
	// OrphanGrace is the grace period of containers no source wants [2s].
	OrphanGrace time.Duration

	// Admit, when set, is asked before a pod the agent has never run is
	// first started, with the other pods that are not finished; a refused
	// pod is never started and its status becomes Failed with reason and
	// message (the kubelet's admission: eviction and resource fit). It is
	// called from the sync loop and must not block.
	Admit func(pod *api.Pod, others []*api.Pod) (ok bool, reason, message string)
}

// Validate reports the first missing required field.
func (c *Config) Validate() error {
	switch {
	case c.NodeName == "":
		return errors.New("kubelet config: NodeName is required")
	case c.PodsDir == "":
		return errors.New("kubelet config: PodsDir is required")
	case c.Runtime == nil:
		return errors.New("kubelet config: Runtime is required")
	case c.Status == nil:
		return errors.New("kubelet config: Status is required")
	}
	return nil
}

func (c *Config) setDefaults() {
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.HostIP == nil {
		c.HostIP = func() string { return "" }
	}
	if c.PodIP == nil && c.Network != nil {
		c.PodIP = c.Network.PodIP
	}
	if c.PodIP == nil {
		c.PodIP = func(string) string { return "" }
	}
	if c.ResolvConf == "" {
		c.ResolvConf = "/etc/resolv.conf"
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.SourcesReady == nil {
		c.SourcesReady = func() bool { return true }
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.SyncPeriod, time.Second)
	def(&c.HousekeepingPeriod, 2*time.Second)
	def(&c.NetworkResync, 30*time.Second)
	def(&c.RelistPeriod, time.Second)
	def(&c.ResyncInterval, time.Minute)
	def(&c.ErrorRetry, 10*time.Second)
	def(&c.OrphanGrace, 2*time.Second)
	if c.MaxLogSize <= 0 {
		c.MaxLogSize = 10 << 20
	}
}

// Kubelet runs the pods the config sources want on the runtime. Create it
// with New, then call Run once. Pods and LogPath may be called from any
// goroutine.
type Kubelet struct {
	cfg     Config
	clock   clock.Clock
	log     *slog.Logger
	rt      runtime.Runtime
	volumes *volumes.Manager
	pleg    *pleg
	queue   *workQueue
	crash   *backoff // container restarts, by pod/container
	pulls   *backoff // image pulls, by pod/image

	mu      sync.Mutex
	workers *podWorkers                         // set by Run; read under mu outside the loop
	pods    map[string]*api.Pod                 // desired pods, by UID
	reasons map[string]map[string]waitingReason // by pod UID, then containerKey
	sent    map[string]api.PodStatus            // last status sent, by pod UID
	// evicted holds the reason and message a pod killed by KillPodWithStatus
	// ends with, by pod UID.
	evicted map[string]waitingReason
	// rejected are the pods Config.Admit refused, by UID; they never run.
	rejected map[string]bool
	flushes  chan chan struct{} // tests: run a sync-loop pass

	// Owned by the sync loop: the live set (sorted UIDs, joined) of the
	// last successful network Reconcile, and when it ran.
	netLive string
	netAt   time.Time
}

// New returns a Kubelet for cfg; it fails on an invalid cfg.
func New(cfg Config) (*Kubelet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	k := &Kubelet{
		cfg:      cfg,
		clock:    cfg.Clock,
		log:      cfg.Logger,
		rt:       cfg.Runtime,
		volumes:  &volumes.Manager{PodsDir: cfg.PodsDir, Objects: cfg.Objects, VolumesDir: filepath.Join(filepath.Dir(cfg.PodsDir), "volumes")},
		queue:    newWorkQueue(),
		crash:    newBackoff(backoffInitial, backoffMax),
		pulls:    newBackoff(backoffInitial, backoffMax),
		pods:     map[string]*api.Pod{},
		reasons:  map[string]map[string]waitingReason{},
		sent:     map[string]api.PodStatus{},
		evicted:  map[string]waitingReason{},
		rejected: map[string]bool{},
		flushes:  make(chan chan struct{}),
	}
	k.pleg = newPLEG(cfg.Runtime, cfg.Clock, cfg.Logger)
	return k, nil
}

// Run is the sync loop. It relists the runtime once (so pods already
// running are adopted as they are), then serves updates, PLEG events,
// due syncs, housekeeping and probe results until ctx ends or updates is
// closed, and waits for its goroutines before it returns.
func (k *Kubelet) Run(ctx context.Context, updates <-chan config.PodUpdate) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	workers := newPodWorkers(ctx, k.clock, podFuncs{
		sync:       k.syncPod,
		kill:       k.killPod,
		terminated: k.cfg.Status.PodTerminated,
		cleanup:    k.cleanupPod,
		done:       k.workDone,
	})
	k.mu.Lock()
	k.workers = workers
	k.mu.Unlock()
	if err := k.pleg.relist(ctx); err != nil {
		k.log.Warn("initial relist failed", "err", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); k.pleg.run(ctx, k.cfg.RelistPeriod) }()
	defer func() {
		cancel()
		wg.Wait()
		k.workers.wait()
	}()

	syncTicker := k.clock.NewTicker(k.cfg.SyncPeriod)
	defer syncTicker.Stop()
	hkTicker := k.clock.NewTicker(k.cfg.HousekeepingPeriod)
	defer hkTicker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-updates:
			if !ok {
				return nil
			}
			k.handleUpdate(u)
		case e := <-k.pleg.events:
			k.handlePLEGEvent(e)
		case <-syncTicker.C():
			k.syncDue()
		case <-hkTicker.C():
			k.housekeeping(ctx)
		case r := <-k.cfg.ProbeResults:
			k.dispatchSync(r.PodUID)
		case done := <-k.flushes:
			k.flushPass(ctx, syncTicker, hkTicker)
			close(done)
		}
	}
}

// handleUpdate applies one PodUpdate from the sources.
func (k *Kubelet) handleUpdate(u config.PodUpdate) {
	for _, pod := range u.Pods {
		if pod == nil || pod.UID == "" {
			k.log.Warn("pod update without uid ignored", "op", u.Op, "source", u.Source)
			continue
		}
		switch u.Op {
		case config.ADD, config.UPDATE, config.RESTORE:
			k.setPod(pod)
			if k.refused(pod) {
				continue
			}
			k.workers.updatePod(pod, workSync, nil, false)
		case config.DELETE:
			k.setPod(pod)
			if k.isRejected(pod.UID) {
				k.cfg.Status.PodTerminated(pod) // never ran: nothing to stop
				continue
			}
			k.workers.updatePod(pod, workKill, nil, false)
		case config.REMOVE:
			k.mu.Lock()
			delete(k.pods, pod.UID)
			rejected := k.rejected[pod.UID]
			delete(k.rejected, pod.UID)
			k.mu.Unlock()
			if rejected {
				// never ran; a worker would hold nothing to stop
				k.forgetPod(pod.UID)
				k.cfg.Status.RemovePod(pod.UID)
			}
			// Always tell the workers: whatever made a worker for the
			// pod, its removal is what lets it finish.
			k.workers.updatePod(pod, workKill, removeGrace(u.Source), true)
		case config.RECONCILE:
			k.setPod(pod) // only the status changed at the source
			if terminalPhase(pod.Status.Phase) && !k.isRejected(pod.UID) {
				// The server declared the pod finished (the node
				// lifecycle controller marks a lost node's bare pods
				// Failed): stop it, as the kubelet does, and never
				// start it again. A refused pod's own Failed status
				// coming back is no reason to make it a worker:
				// nothing of it runs, and nothing would finish it.
				k.workers.updatePod(pod, workKill, nil, false)
			}
		default:
			k.log.Warn("unknown pod update op ignored", "op", u.Op)
		}
	}
}

// removeGrace is the grace period of a pod its source removed. The
// server's word is authoritative: a pod gone from the assignment stream
// was force-deleted (or its graceful stop is over), so it stops at once
// (SIGKILL), whatever grace it was running under. Only an absent server
// keeps pods running. A static pod whose file went stops with its own
// grace period.
func removeGrace(source string) *int64 {
	if source != config.SourceAPI {
		return nil
	}
	zero := int64(0)
	return &zero
}

// EventRecorder posts events about pods (agent/status.Recorder).
type EventRecorder interface {
	Eventf(pod *api.Pod, eventType, reason, messageFmt string, args ...any)
}

// event records an event about pod, if anyone listens.
func (k *Kubelet) event(pod *api.Pod, eventType, reason, format string, args ...any) {
	if k.cfg.Events != nil {
		k.cfg.Events.Eventf(pod, eventType, reason, format, args...)
	}
}

// terminalPhase reports whether a pod phase is final.
func terminalPhase(p api.PodPhase) bool { return p == api.PodFailed || p == api.PodSucceeded }

func (k *Kubelet) setPod(pod *api.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.pods[pod.UID] = pod
}

// desired returns the desired pod uid, nil if no source wants it.
func (k *Kubelet) desired(uid string) *api.Pod {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pods[uid]
}

func (k *Kubelet) handlePLEGEvent(e PodLifecycleEvent) {
	k.dispatchSync(e.PodUID)
}

// dispatchSync hands a sync of pod uid to its worker, if a source wants it.
func (k *Kubelet) dispatchSync(uid string) {
	if pod := k.desired(uid); pod != nil {
		k.workers.updatePod(pod, workSync, nil, false)
	}
}

// syncDue dispatches the pods whose next sync time has come.
func (k *Kubelet) syncDue() {
	for _, uid := range k.queue.popDue(k.clock.Now()) {
		if pod := k.desired(uid); pod != nil {
			k.workers.updatePod(pod, workSync, nil, false)
		} else if st, ok := k.workers.state(uid); ok && st != PodSyncing {
			// a retry of a failed kill or cleanup of a removed pod
			k.workers.mu.Lock()
			if r := k.workers.records[uid]; r != nil {
				k.workers.updateLocked(r.pod, workKill, nil, false, r.orphan)
			}
			k.workers.mu.Unlock()
		}
	}
}

// workDone schedules pod uid's next sync after a unit of work.
func (k *Kubelet) workDone(uid string, err error, requeue time.Duration) {
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		k.log.Info("pod sync failed; will retry", "pod", uid, "err", err)
		if requeue <= 0 || requeue > k.cfg.ErrorRetry {
			requeue = k.cfg.ErrorRetry
		}
	case requeue <= 0:
		requeue = k.cfg.ResyncInterval
	}
	k.queue.enqueue(uid, k.clock.Now().Add(requeue))
}

// flushPass handles, in the loop, whatever is pending right now: PLEG
// events and ticks already delivered. Tests use it (through the flushes
// channel) to reach a steady state without racing the select.
func (k *Kubelet) flushPass(ctx context.Context, syncTicker, hkTicker clock.Ticker) {
	for {
		select {
		case e := <-k.pleg.events:
			k.handlePLEGEvent(e)
			continue
		case <-hkTicker.C():
			k.housekeeping(ctx)
			continue
		case <-syncTicker.C():
		default:
		}
		break
	}
	k.syncDue()
}

// PodInfo is a desired pod and where its worker is.
type PodInfo struct {
	Pod   *api.Pod
	State PodState
}

// Pods returns a snapshot of the desired pods with their states (the
// eviction manager picks victims from it). The pods are shared: read only.
func (k *Kubelet) Pods() []PodInfo {
	k.mu.Lock()
	pods := make([]*api.Pod, 0, len(k.pods))
	for _, p := range k.pods {
		pods = append(pods, p)
	}
	workers := k.workers
	k.mu.Unlock()
	out := make([]PodInfo, 0, len(pods))
	for _, p := range pods {
		st := PodSyncing
		if workers != nil {
			st, _ = workers.state(p.UID)
		}
		if k.isRejected(p.UID) {
			st = PodTerminated
		}
		out = append(out, PodInfo{Pod: p, State: st})
	}
	return out
}

// KillPod asks the worker of pod uid to stop it with at most grace
// seconds (the eviction manager's entry point). It fails for an unknown
// pod.
func (k *Kubelet) KillPod(uid string, grace int64) error {
	k.mu.Lock()
	pod, workers := k.pods[uid], k.workers
	k.mu.Unlock()
	if pod == nil || workers == nil {
		return fmt.Errorf("kill pod %s: %w", uid, ErrNotFound)
	}
	workers.updatePod(pod, workKill, &grace, false)
	return nil
}

// KillPodWithStatus is KillPod for the eviction manager: the pod's final
// status has phase Failed with reason and message (reason "Evicted").
// A grace of 0 kills the containers at once.
func (k *Kubelet) KillPodWithStatus(uid string, grace int64, reason, message string) error {
	k.mu.Lock()
	_, known := k.pods[uid]
	if known {
		k.evicted[uid] = waitingReason{Reason: reason, Message: message}
	}
	k.mu.Unlock()
	return k.KillPod(uid, grace)
}
