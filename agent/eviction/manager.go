package eviction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/status"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// PodSource is what the manager needs of the kubelet: *kubelet.Kubelet.
type PodSource interface {
	// Pods returns the desired pods and where their workers are.
	Pods() []kubelet.PodInfo
	// KillPodWithStatus stops pod uid with at most grace seconds; its
	// final status is Failed with reason and message.
	KillPodWithStatus(uid string, grace int64, reason, message string) error
}

// Recorder posts events: *status.Recorder.
type Recorder interface {
	Eventf(pod *api.Pod, eventType, reason, messageFmt string, args ...any)
	NodeEventf(eventType, reason, messageFmt string, args ...any)
}

// podCleanupTimeout bounds how long the manager waits for a victim to
// stop before it may evict another pod, as the kubelet's.
const podCleanupTimeout = 30 * time.Second

// Deps are the manager's collaborators. Stats and Pods are required.
type Deps struct {
	Stats StatsProvider
	Pods  PodSource
	// Reclaimer frees node-level resources before pods are evicted for
	// disk; nil skips that step.
	Reclaimer Reclaimer
	Recorder  Recorder // may be nil
	// Notifier wakes the cycle as soon as memory crosses a threshold;
	// nil leaves only the periodic cycle.
	Notifier Notifier
	// Allocatable returns the node's allocatable resources for admission
	// (nil: only the pod count is checked).
	Allocatable func() api.ResourceList
	// OnConditionsChange is called (outside the manager's lock) when the
	// pressure conditions change, e.g. to send the node status at once.
	OnConditionsChange func()
	Clock              clock.Clock  // default clock.Real
	Logger             *slog.Logger // default: discard
}

// Manager is the eviction manager. Create it with New; Run drives the
// cycle, Synchronize runs one. Conditions, Taints and Admit may be called
// from any goroutine.
type Manager struct {
	cfg   Config
	deps  Deps
	clock clock.Clock
	log   *slog.Logger

	mu               sync.Mutex
	thresholdsMet    []Threshold          // met past their grace, not yet reclaimed past min-reclaim
	firstObserved    thresholdsObservedAt // when each met threshold was first seen
	condLastObserved map[string]time.Time // when each condition's threshold was last met
	conditions       []string             // pressure conditions now true
	condSince        map[string]time.Time // when each true condition became true
	lastObs          observations
	victim           string // uid of the last pod evicted, until it stops
	victimAt         time.Time
	latest           Summary    // the last cycle's reading, for metrics
	latestPods       []*api.Pod // the pods it read
	evictions        map[Signal]uint64
}

// Evictions returns how many pods the manager has evicted, by the
// signal that caused it (a copy).
func (m *Manager) Evictions() map[string]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]uint64, len(m.evictions))
	for s, n := range m.evictions {
		out[string(s)] = n
	}
	return out
}

// Latest returns the last cycle's reading and the pods it covered, so
// metrics reuse what eviction read rather than read it again. ok is
// false before the first cycle has read anything.
func (m *Manager) Latest() (s Summary, pods []*api.Pod, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.latest, m.latestPods, !m.latest.Time.IsZero()
}

// New returns a Manager for cfg.
func New(cfg Config, deps Deps) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Stats == nil || deps.Pods == nil {
		return nil, errors.New("eviction: Deps.Stats and Deps.Pods are required")
	}
	if cfg.MonitorInterval <= 0 {
		cfg.MonitorInterval = DefaultMonitorInterval
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		cfg: cfg, deps: deps, clock: clock.Or(deps.Clock), log: log,
		firstObserved: thresholdsObservedAt{}, condLastObserved: map[string]time.Time{}, condSince: map[string]time.Time{},
	}, nil
}

// Run runs the cycle every MonitorInterval, and at once when the
// Notifier fires, until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	ticker := m.clock.NewTicker(m.cfg.MonitorInterval)
	defer ticker.Stop()
	var wake <-chan struct{}
	if m.deps.Notifier != nil {
		wake = m.deps.Notifier.C()
	}
	for {
		if _, err := m.Synchronize(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("eviction cycle failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		case <-wake:
		}
	}
}

// activePods are the pods whose workers run them (not terminating),
// mirror pods left out.
func activePods(infos []kubelet.PodInfo) []*api.Pod {
	var out []*api.Pod
	for _, i := range infos {
		if i.State == kubelet.PodSyncing && !config.IsMirrorPod(i.Pod) {
			out = append(out, i.Pod)
		}
	}
	return out
}

// Synchronize runs one cycle, as the kubelet's synchronize does:
// observations → thresholds met → merged with those met earlier and not
// yet reclaimed past min-reclaim → first-observed times → node
// conditions held for the transition period → thresholds whose grace has
// passed → (with fresh stats) local storage limits → node-level reclaim
// and re-measure → rank the pods and evict at most one. It returns the
// pods it evicted.
func (m *Manager) Synchronize(ctx context.Context) ([]*api.Pod, error) {
	infos := m.deps.Pods.Pods()
	pods := activePods(infos)
	summary, err := m.deps.Stats.Summary(ctx, pods)
	if err != nil {
		return nil, fmt.Errorf("read stats: %w", err)
	}
	obs := makeObservations(summary)
	now := m.clock.Now()
	m.armNotifier(obs)

	m.mu.Lock()
	m.latest, m.latestPods = summary, pods
	met := thresholdsMet(m.cfg.Thresholds, obs, false)
	if len(m.thresholdsMet) > 0 {
		met = mergeThresholds(met, thresholdsMet(m.thresholdsMet, obs, true))
	}
	first := thresholdsFirstObservedAt(met, m.firstObserved, now)
	lastSeen := nodeConditionsLastObservedAt(nodeConditions(met), m.condLastObserved, now)
	conds := nodeConditionsObservedSince(lastSeen, m.cfg.PressureTransitionPeriod, now)
	met = thresholdsMetGracePeriod(first, now)
	changed := !slices.Equal(conds, m.conditions)
	old := m.conditions
	m.firstObserved, m.condLastObserved, m.conditions, m.thresholdsMet = first, lastSeen, conds, met
	for _, c := range conds {
		if _, ok := m.condSince[c]; !ok {
			m.condSince[c] = now
		}
	}
	for c := range m.condSince {
		if !hasCondition(conds, c) {
			delete(m.condSince, c)
		}
	}
	fresh := thresholdsUpdatedStats(met, obs, m.lastObs)
	m.lastObs = obs
	waiting := m.waitingForVictimLocked(infos, now)
	m.mu.Unlock()

	if changed {
		m.conditionsChanged(old, conds)
	}
	if waiting {
		return nil, nil // one eviction at a time: the last victim is still stopping
	}
	if evicted := m.localStorageEviction(pods, summary); len(evicted) > 0 {
		return evicted, nil
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	t := fresh[0] // sorted by eviction priority: memory first
	if m.reclaimNodeLevel(ctx, t, obs, infos, pods) {
		return nil, nil
	}
	r := signalResource(t.Signal)
	ranked := slices.Clone(pods)
	rankPods(ranked, summary.Pods, r)
	for _, pod := range ranked {
		if IsCritical(pod) {
			continue // never evicted; the kubelet refuses too
		}
		st, ok := summary.Pods[pod.UID]
		msg := evictionMessage(t, obs, pod, st, ok)
		if m.evict(pod, m.gracePeriod(pod, t.Hard), msg, t.Signal) {
			return []*api.Pod{pod}, nil
		}
	}
	m.log.Warn("eviction threshold met but no pod can be evicted", "threshold", t.String())
	return nil, nil
}

// armNotifier asks the Notifier for a wake-up at the first memory
// threshold each memory signal would cross.
func (m *Manager) armNotifier(obs observations) {
	n := m.deps.Notifier
	if n == nil {
		return
	}
	for _, sig := range []Signal{SignalMemoryAvailable, SignalAllocatableMemoryAvailable} {
		o, ok := obs[sig]
		if !ok {
			continue
		}
		var limit int64
		for _, t := range m.cfg.Thresholds {
			if t.Signal == sig {
				limit = max(limit, t.Value.Resolve(o.capacity))
			}
		}
		if limit == 0 {
			continue
		}
		if err := n.Arm(sig, o.capacity, limit); err != nil {
			m.log.Debug("arm memory notifier", "signal", sig, "err", err)
		}
	}
}

// waitingForVictimLocked reports whether the last victim is still
// stopping (and the cleanup timeout has not passed).
func (m *Manager) waitingForVictimLocked(infos []kubelet.PodInfo, now time.Time) bool {
	if m.victim == "" {
		return false
	}
	if now.Sub(m.victimAt) < podCleanupTimeout {
		for _, i := range infos {
			if i.Pod.UID == m.victim && i.State != kubelet.PodTerminated {
				return true
			}
		}
	}
	m.victim = ""
	return false
}

// gracePeriod is the grace an evicted pod gets: none for a hard
// threshold; for a soft one the pod's own, capped by
// MaxPodGracePeriodSeconds when that is positive.
func (m *Manager) gracePeriod(pod *api.Pod, hard bool) int64 {
	if hard {
		return 0
	}
	own := api.DefaultTerminationGracePeriodSeconds
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		own = *pod.Spec.TerminationGracePeriodSeconds
	}
	if m.cfg.MaxPodGracePeriodSeconds > 0 {
		return min(own, m.cfg.MaxPodGracePeriodSeconds)
	}
	return own
}

// evict kills pod with grace and records events on it and the node.
func (m *Manager) evict(pod *api.Pod, grace int64, msg string, sig Signal) bool {
	if err := m.deps.Pods.KillPodWithStatus(pod.UID, grace, ReasonEvicted, msg); err != nil {
		m.log.Warn("evict pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		return false
	}
	m.mu.Lock()
	m.victim, m.victimAt = pod.UID, m.clock.Now()
	if m.evictions == nil {
		m.evictions = map[Signal]uint64{}
	}
	m.evictions[sig]++
	m.mu.Unlock()
	m.log.Info("evicted pod", "pod", pod.Namespace+"/"+pod.Name, "signal", sig, "grace", grace, "message", msg)
	if r := m.deps.Recorder; r != nil {
		r.Eventf(pod, api.EventTypeWarning, ReasonEvicted, "%s", msg)
		r.NodeEventf(api.EventTypeWarning, ReasonNodePressure, "Attempting to reclaim %s: evicted pod %s/%s", signalResource(sig), pod.Namespace, pod.Name)
	}
	return true
}

// localStorageEviction evicts, with no grace, every pod over a local
// storage limit (emptyDir sizeLimit, ephemeral-storage limits).
func (m *Manager) localStorageEviction(pods []*api.Pod, s Summary) []*api.Pod {
	var out []*api.Pod
	for _, pod := range pods {
		st, ok := s.Pods[pod.UID]
		if !ok || IsCritical(pod) {
			continue
		}
		if msg := localStorageViolation(pod, st); msg != "" && m.evict(pod, 0, msg, SignalNodeFsAvailable) {
			out = append(out, pod)
		}
	}
	return out
}

// conditionsChanged records node events and calls OnConditionsChange.
func (m *Manager) conditionsChanged(old, cur []string) {
	if r := m.deps.Recorder; r != nil {
		for _, c := range conditionTypes {
			was, is := hasCondition(old, c), hasCondition(cur, c)
			switch {
			case is && !was:
				r.NodeEventf(api.EventTypeWarning, conditionReason(c, true), "Node has condition %s", c)
			case was && !is:
				r.NodeEventf(api.EventTypeNormal, conditionReason(c, false), "Node no longer has condition %s", c)
			}
		}
	}
	m.log.Info("node pressure conditions changed", "from", old, "to", cur)
	if m.deps.OnConditionsChange != nil {
		m.deps.OnConditionsChange()
	}
}

// conditionReason is the kubelet's reason for a pressure condition.
func conditionReason(c string, pressure bool) string {
	switch {
	case c == api.NodeMemoryPressure && pressure:
		return "KubeletHasInsufficientMemory"
	case c == api.NodeMemoryPressure:
		return "KubeletHasSufficientMemory"
	case c == api.NodeDiskPressure && pressure:
		return "KubeletHasDiskPressure"
	case c == api.NodeDiskPressure:
		return "KubeletHasNoDiskPressure"
	case pressure:
		return "KubeletHasInsufficientPID"
	}
	return "KubeletHasSufficientPID"
}

// Conditions returns the pressure conditions now true, for
// node.Config.Conditions (the registrar reports the others False).
func (m *Manager) Conditions() []api.NodeCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]api.NodeCondition, 0, len(m.conditions))
	for _, c := range m.conditions {
		out = append(out, api.NodeCondition{
			Type: c, Status: api.ConditionTrue, Reason: conditionReason(c, true),
			Message:            "node has " + c,
			LastTransitionTime: api.NewTime(m.condSince[c]),
		})
	}
	return out
}

// Taints returns the NoSchedule taints of the pressure conditions now
// true ("node.kubernetes.io/memory-pressure:NoSchedule", …).
func (m *Manager) Taints() []api.Taint {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]api.Taint, 0, len(m.conditions))
	for _, c := range m.conditions {
		out = append(out, api.Taint{Key: conditionTaint(c), Effect: api.TaintEffectNoSchedule})
	}
	return out
}

// Admit is kubelet.Config.Admit: it refuses pods the node cannot take
// now (pressure, allocatable, max pods).
func (m *Manager) Admit(pod *api.Pod, others []*api.Pod) (ok bool, reason, message string) {
	m.mu.Lock()
	conds := slices.Clone(m.conditions)
	m.mu.Unlock()
	var alloc api.ResourceList
	if m.deps.Allocatable != nil {
		alloc = m.deps.Allocatable()
	}
	return admitPod(pod, others, conds, alloc, m.cfg.MaxPods)
}

// The agent's implementations of the interfaces declared here.
var (
	_ PodSource = (*kubelet.Kubelet)(nil)
	_ Recorder  = (*status.Recorder)(nil)
	_ Reclaimer = runtime.Runtime(nil)
)
