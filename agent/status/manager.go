package status

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// PodClient is what the status manager needs of the server:
// *client.Client with the node's credential.
type PodClient interface {
	Get(ctx context.Context, res api.ResourceInfo, ns, name string) (api.Object, error)
	Create(ctx context.Context, obj api.Object) (api.Object, error)
	UpdateStatus(ctx context.Context, obj api.Object) (api.Object, error)
	Do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error)
}

var _ PodClient = (*client.Client)(nil)

// Defaults of Config.
const (
	// DefaultBatchDelay is how long a status change waits for more
	// changes to the same pods before it is written.
	DefaultBatchDelay = 100 * time.Millisecond
	// DefaultResyncPeriod is how often mirror pods and terminated pods
	// are read back from the server.
	DefaultResyncPeriod = 10 * time.Second
	// maxConflictRetries bounds the immediate retries of one sync after
	// 409s before it backs off.
	maxConflictRetries = 3
)

// Config configures a Manager.
type Config struct {
	// Client writes to the server with the node's credential.
	Client PodClient
	// NodeName is the node the manager reports for.
	NodeName string
	// Clock times batching, backoff and resync. Default clock.Real.
	Clock clock.Clock
	// BatchDelay: default DefaultBatchDelay.
	BatchDelay time.Duration
	// PhaseChangeDelay is how long a status that changes the pod's phase
	// or its Ready condition (from the server's copy) waits before it is
	// written: 0, the default, writes it as soon as the writer is free,
	// so a pod is seen Running without the batch delay. Changes arriving
	// while a write is under way are still coalesced into the next.
	PhaseChangeDelay time.Duration
	// ResyncPeriod: default DefaultResyncPeriod.
	ResyncPeriod time.Duration
	// Backoff bounds the waits after failed writes (per pod). Default
	// 500ms to 10s with jitter.
	Backoff backoff.Backoff
	// Logger. Default slog.Default().
	Logger *slog.Logger
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("status manager: a client is required"))
	}
	if c.NodeName == "" {
		errs = append(errs, errors.New("status manager: a node name is required"))
	}
	if c.BatchDelay < 0 || c.ResyncPeriod < 0 || c.PhaseChangeDelay < 0 {
		errs = append(errs, errors.New("status manager: negative period"))
	}
	return errors.Join(errs...)
}

// Manager writes pod statuses to the server for the sync loop, as the
// kubelet's status manager does. Its methods return at once; one
// goroutine (Run) does the writes. Per pod only the latest status
// matters: changes that arrive before a write are coalesced into it, and
// a status equal to the server's is not written. Writes are PUTs of the
// status subresource with the resourceVersion last seen (a 409 re-reads
// the pod and retries); failures are retried with backoff, so while the
// server is away statuses wait and are written when it is back.
//
// Static pods have their status written to a mirror pod the manager
// creates (annotated api.MirrorPodAnnotation with the static pod's hash),
// recreates when it is deleted or stale, and deletes when the static pod
// goes (RemovePod).
type Manager struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger
	pods  api.ResourceInfo

	notify chan struct{}
	// afterSync, if set (tests), is called after each round of writes.
	afterSync func()

	mu            sync.Mutex
	entries       map[string]*entry     // pod UID → state
	mirrorDeletes map[string]*mirrorDel // static pod UID → its mirror to delete
}

// entry is what the manager knows of one pod. The fields are guarded by
// Manager.mu.
type entry struct {
	pod        *api.Pod       // the agent's latest copy
	status     *api.PodStatus // latest desired status; nil until SetPodStatus
	version    uint64         // bumped by every change that needs a sync
	synced     uint64         // version last synced
	terminated bool           // PodTerminated was called
	deleted    bool           // the API pod's deletion was confirmed
	refresh    bool           // re-read the server's copy before writing
	server     *api.Pod       // last known server copy (the mirror for static pods)
	due        time.Time      // when to sync; zero when nothing to do
	urgent     uint64         // the latest version that changed phase or readiness
	failing    bool           // the last write failed: due is a back-off
	bo         backoff.Backoff
}

// mirrorDel is a mirror pod to delete because its static pod is gone.
type mirrorDel struct {
	ns, name, hash string
	due            time.Time
	bo             backoff.Backoff
}

// New returns a Manager for cfg; start it with Run.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.BatchDelay == 0 {
		cfg.BatchDelay = DefaultBatchDelay
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	if cfg.Backoff.Max == 0 {
		cfg.Backoff.Max = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	res, ok := api.LookupResource("pods")
	if !ok {
		return nil, errors.New("status manager: the pods resource is not registered")
	}
	return &Manager{
		cfg: cfg, clock: clock.Or(cfg.Clock), log: log.With("component", "status"), pods: res,
		notify: make(chan struct{}, 1), entries: map[string]*entry{}, mirrorDeletes: map[string]*mirrorDel{},
	}, nil
}

// SetPodStatus records status as pod's desired status and returns at
// once; the write follows. pod is the pod as the sync loop has it (the
// API pod, or the static pod); neither is kept.
func (m *Manager) SetPodStatus(pod *api.Pod, status api.PodStatus) {
	if pod == nil || pod.UID == "" {
		return
	}
	st := copyStatus(status)
	m.mu.Lock()
	e := m.entryLocked(pod)
	if e.status != nil && jsonEqual(*e.status, st) {
		m.mu.Unlock()
		return
	}
	e.status = &st
	m.dirtyLocked(e, phaseChanged(e.server, &st))
	m.mu.Unlock()
	m.wake()
}

// PodTerminated records that every container of pod has stopped. The
// final status (the last SetPodStatus) is written, then, if the API pod
// has a deletionTimestamp, its deletion is confirmed (DELETE with grace
// period 0, preconditioned on its UID and resourceVersion). Call it again
// with the newer pod when a terminated pod is deleted later; the manager
// also rereads terminated pods every ResyncPeriod.
func (m *Manager) PodTerminated(pod *api.Pod) {
	if pod == nil || pod.UID == "" {
		return
	}
	m.mu.Lock()
	e := m.entryLocked(pod)
	e.terminated = true
	m.dirtyLocked(e, false)
	m.mu.Unlock()
	m.wake()
}

// RemovePod forgets the pod with uid once it has left its source: pending
// writes for it are dropped. For a static pod its mirror pod is deleted.
func (m *Manager) RemovePod(uid string) {
	m.mu.Lock()
	e, ok := m.entries[uid]
	if ok {
		delete(m.entries, uid)
		if config.IsStaticPod(e.pod) {
			m.mirrorDeletes[uid] = &mirrorDel{ns: e.pod.Namespace, name: e.pod.Name, hash: config.StaticPodHash(e.pod),
				due: m.clock.Now(), bo: m.cfg.Backoff}
		}
	}
	m.mu.Unlock()
	if ok {
		m.wake()
	}
}

// entryLocked returns pod's entry, made if new, with pod recorded.
func (m *Manager) entryLocked(pod *api.Pod) *entry {
	e, ok := m.entries[pod.UID]
	if !ok {
		e = &entry{bo: m.cfg.Backoff, refresh: config.IsStaticPod(pod)}
		m.entries[pod.UID] = e
	}
	e.pod = config.CopyPod(pod)
	if !config.IsStaticPod(pod) && newerThan(pod, e.server) {
		e.server = e.pod
	}
	return e
}

// dirtyLocked schedules e's sync after the batch delay (the phase change
// delay when urgent), unless it is already scheduled earlier, or later
// while it backs off.
func (m *Manager) dirtyLocked(e *entry, urgent bool) {
	e.version++
	delay := m.cfg.BatchDelay
	if urgent {
		e.urgent = e.version
		delay = m.cfg.PhaseChangeDelay
	}
	due := m.clock.Now().Add(delay)
	if e.due.IsZero() || !e.failing && due.Before(e.due) {
		e.due = due
	}
}

// phaseChanged reports whether st changes the phase or the Ready
// condition of server (the last known server copy; a change when nil).
func phaseChanged(server *api.Pod, st *api.PodStatus) bool {
	if server == nil {
		return true
	}
	return server.Status.Phase != st.Phase || podReady(&server.Status) != podReady(st)
}

func podReady(st *api.PodStatus) string {
	for _, c := range st.Conditions {
		if c.Type == api.PodReady {
			return c.Status
		}
	}
	return ""
}

func (m *Manager) wake() {
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

// newerThan reports whether a's resourceVersion is later than b's (true
// when b is nil; false when either is not a number).
func newerThan(a, b *api.Pod) bool {
	if b == nil {
		return true
	}
	ra, err1 := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, err2 := strconv.ParseUint(b.ResourceVersion, 10, 64)
	return err1 == nil && err2 == nil && ra > rb
}

// Run writes statuses until ctx ends, then returns ctx's error. Call it
// once.
func (m *Manager) Run(ctx context.Context) error {
	resync := m.clock.NewTicker(m.cfg.ResyncPeriod)
	defer resync.Stop()
	var timer clock.Timer
	// armed is the due time the timer is set for (zero: not set). A
	// wake that leaves the earliest due time as it was leaves the timer
	// alone: re-arming it from a duration read a moment earlier could
	// push it past a clock that moved meanwhile (a test's fake clock,
	// advanced while the loop handled a late wake, so the write never
	// came).
	var armed time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		var timerC <-chan time.Time
		if due, ok := m.nextDue(); ok {
			if !due.Equal(armed) {
				d := due.Sub(m.clock.Now())
				if timer == nil {
					timer = m.clock.NewTimer(d)
				} else {
					timer.Stop()
					timer.Reset(d)
				}
				armed = due
			}
			timerC = timer.C()
		} else if !armed.IsZero() {
			timer.Stop()
			armed = time.Time{}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.notify:
		case <-resync.C():
			m.markResync()
		case <-timerC:
			armed = time.Time{}
			m.syncDue(ctx)
			if m.afterSync != nil {
				m.afterSync()
			}
		}
	}
}

// nextDue returns the earliest time something is due.
func (m *Manager) nextDue() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var first time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	for _, e := range m.entries {
		consider(e.due)
	}
	for _, d := range m.mirrorDeletes {
		consider(d.due)
	}
	return first, !first.IsZero()
}

// markResync schedules a reread of mirror pods and of terminated pods
// whose deletion may still need confirming.
func (m *Manager) markResync() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		// A terminated pod in a final phase needs no confirmation (the
		// server removes such pods at once), so only the others are
		// reread, in case their deletion began unseen.
		final := e.status != nil && (e.status.Phase == api.PodSucceeded || e.status.Phase == api.PodFailed)
		if config.IsStaticPod(e.pod) || e.terminated && !e.deleted && !final {
			e.refresh = true
			if e.due.IsZero() {
				e.due = m.clock.Now()
			}
		}
	}
}
