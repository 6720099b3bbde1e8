package prober

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// Config wires a Manager.
type Config struct {
	// Runtime runs exec probes. Required.
	Runtime Execer
	Clock   clock.Clock // default clock.Real
	// PodIP is the address httpGet and tcpSocket probes use when the
	// probe names no host. Default: none (those probes fail).
	PodIP func(uid string) string
	// Dial opens probe connections; default a net.Dialer. Tests dial
	// inside the network namespace they made.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnUpdate receives every change of verdict, from the workers'
	// goroutines. It may block briefly (the worker waits) but must return
	// once the receiver stops, e.g. by selecting on a context.
	OnUpdate func(Update)
	Logger   *slog.Logger // default: discard
}

// key names one worker: a probe type of a container of a pod.
type key struct {
	uid, container string
	typ            ProbeType
}

// verdict is a worker's current verdict on one container instance.
type verdict struct {
	id     string
	result Result
}

// Manager runs the probe workers. Create it with New; Stop it when the
// agent stops. All methods are safe for concurrent use.
type Manager struct {
	cfg   Config
	clock clock.Clock
	log   *slog.Logger
	// ctx is the workers' lifetime: cancelled by Stop.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	workers  map[key]*worker
	verdicts map[key]verdict
}

// New returns a Manager for cfg.
func New(cfg Config) (*Manager, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("prober: Runtime is required")
	}
	if cfg.PodIP == nil {
		cfg.PodIP = func(string) string { return "" }
	}
	if cfg.Dial == nil {
		d := &net.Dialer{}
		cfg.Dial = d.DialContext
	}
	if cfg.OnUpdate == nil {
		cfg.OnUpdate = func(Update) {}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{cfg: cfg, clock: clock.Or(cfg.Clock), log: cfg.Logger, ctx: ctx, cancel: cancel,
		workers: map[key]*worker{}, verdicts: map[key]verdict{}}, nil
}

// Stop ends every worker and waits for them.
func (m *Manager) Stop() {
	m.cancel()
	m.wg.Wait()
}

// probeOf is container c's probe of type t, nil if none.
func probeOf(c *api.Container, t ProbeType) *api.Probe {
	switch t {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	case Startup:
		return c.StartupProbe
	}
	return nil
}

// UpdatePod tells the manager pod's spec and its running app containers.
// Workers start for the probes declared, stop for probes gone, and a
// container whose ID changed starts over. The kubelet calls it at every
// sync of the pod.
func (m *Manager) UpdatePod(pod *api.Pod, running []Container) {
	if pod == nil || pod.UID == "" {
		return
	}
	byName := map[string]Container{}
	for _, c := range running {
		byName[c.Name] = c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx.Err() != nil {
		return
	}
	want := map[key]bool{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		for _, t := range []ProbeType{Liveness, Readiness, Startup} {
			p := probeOf(c, t)
			if p == nil {
				continue
			}
			k := key{uid: pod.UID, container: c.Name, typ: t}
			want[k] = true
			w := m.workers[k]
			if w == nil {
				w = newWorker(m, k)
				m.workers[k] = w
				m.wg.Add(1)
				go func() { defer m.wg.Done(); w.run(m.ctx) }()
			}
			w.setLocked(withDefaults(p, t), c, byName[c.Name])
		}
	}
	for k, w := range m.workers {
		if k.uid == pod.UID && !want[k] {
			w.stop()
			delete(m.workers, k)
			delete(m.verdicts, k)
		}
	}
}

// RemovePod stops pod uid's workers and forgets its verdicts.
func (m *Manager) RemovePod(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.workers {
		if k.uid == uid {
			w.stop()
			delete(m.workers, k)
			delete(m.verdicts, k)
		}
	}
}

// hasLocked reports whether the container has a probe of type t.
func (m *Manager) hasLocked(uid, name string, t ProbeType) bool {
	_, ok := m.workers[key{uid, name, t}]
	return ok
}

func (m *Manager) verdictLocked(uid, name, id string, t ProbeType) Result {
	v, ok := m.verdicts[key{uid, name, t}]
	if !ok || v.id != id {
		return Unknown
	}
	return v.result
}

func (m *Manager) startedLocked(uid, name, id string) bool {
	return !m.hasLocked(uid, name, Startup) || m.verdictLocked(uid, name, id, Startup) == Success
}

// Started reports whether container instance id has passed its startup
// probe (true when it has none).
func (m *Manager) Started(uid, name, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.startedLocked(uid, name, id)
}

// Ready reports whether container instance id is ready: started, and its
// readiness probe (if any) has succeeded.
func (m *Manager) Ready(uid, name, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.startedLocked(uid, name, id) {
		return false
	}
	return !m.hasLocked(uid, name, Readiness) || m.verdictLocked(uid, name, id, Readiness) == Success
}

// LivenessFailed reports whether container instance id failed its
// liveness or startup probe: the kubelet must restart it.
func (m *Manager) LivenessFailed(uid, name, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.verdictLocked(uid, name, id, Liveness) == Failure || m.verdictLocked(uid, name, id, Startup) == Failure
}

// withDefaults copies p with the Kubernetes defaults filled in (period
// 10 s, timeout 1 s, success 1, failure 3); liveness and startup
// probes always need one success.
func withDefaults(p *api.Probe, t ProbeType) api.Probe {
	q := *p
	if q.PeriodSeconds <= 0 {
		q.PeriodSeconds = 10
	}
	if q.TimeoutSeconds <= 0 {
		q.TimeoutSeconds = 1
	}
	if q.SuccessThreshold <= 0 || t != Readiness {
		q.SuccessThreshold = 1
	}
	if q.FailureThreshold <= 0 {
		q.FailureThreshold = 3
	}
	if q.InitialDelaySeconds < 0 {
		q.InitialDelaySeconds = 0
	}
	return q
}

func secs(n int32) time.Duration { return time.Duration(n) * time.Second }
