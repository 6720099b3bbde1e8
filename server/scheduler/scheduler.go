package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// Scheduler names whose pods this scheduler binds; pods naming another
// scheduler are left alone.
const (
	DefaultSchedulerName = "default-scheduler"
	SkiffSchedulerName   = "skiff-scheduler"
)

// Defaults for zero Config fields.
const (
	DefaultAssumeTTL = 30 * time.Second
	DefaultNodeGrace = 40 * time.Second
	DefaultBinders   = 2
	// maintainInterval is how often assumed pods are expired and node
	// liveness is re-read.
	maintainInterval = time.Second
)

// EventRecorder records an event about an object; *events.Recorder
// implements it. It may block (the scheduler calls it off its loop) and
// reports no error: an event is never worth failing the work.
type EventRecorder interface {
	Eventf(ctx context.Context, obj api.Object, typ, reason, format string, args ...any)
}

// Config configures a Scheduler.
type Config struct {
	// Store is read (list and watch) and written (bindings, pod status,
	// preemption). Required.
	Store *storage.Store
	// Clock defaults to the wall clock.
	Clock clock.Clock
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Recorder receives Scheduled, FailedScheduling and Preempted events;
	// nil records none.
	Recorder EventRecorder
	// Scoring is LeastAllocated (default) or MostAllocated.
	Scoring Scoring
	// Liveness, optional, returns a node's last heartbeat (ok false when
	// none was seen since start); a node silent for longer than NodeGrace
	// is treated as not ready.
	Liveness  func(node string) (time.Time, bool)
	NodeGrace time.Duration
	// PercentageOfNodesToScore: see Algorithm.Percentage.
	PercentageOfNodesToScore int
	// Workers filter and score in parallel; 0 means GOMAXPROCS.
	Workers int
	// Binders write bindings concurrently, each taking every bind ready
	// when it starts (default 2).
	Binders int
	// AssumeTTL is how long a committed binding may go unconfirmed by the
	// watch before the assumption is dropped (default 30s).
	AssumeTTL time.Duration
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("store is required"))
	}
	if c.Scoring != "" && c.Scoring != LeastAllocated && c.Scoring != MostAllocated {
		errs = append(errs, fmt.Errorf("scoring %q is not %s or %s", c.Scoring, LeastAllocated, MostAllocated))
	}
	if c.PercentageOfNodesToScore < 0 || c.PercentageOfNodesToScore > 100 {
		errs = append(errs, fmt.Errorf("percentage of nodes to score %d is outside [0, 100]", c.PercentageOfNodesToScore))
	}
	if c.Workers < 0 || c.Binders < 0 || c.NodeGrace < 0 || c.AssumeTTL < 0 {
		errs = append(errs, errors.New("workers, binders, node grace and assume TTL must not be negative"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("scheduler config: %w", errors.Join(errs...))
	}
	return nil
}

// Scheduler binds pending pods to nodes. Create it with New, start it
// with Run (once); Metrics may be read meanwhile from any goroutine.
type Scheduler struct {
	cfg     Config
	store   *storage.Store
	clk     clock.Clock
	log     *slog.Logger
	algo    Algorithm
	metrics *Metrics

	in    *inbox[message]     // informers and binders → loop
	binds *inbox[bindRequest] // loop → binders
	fx    *effects
	self  *selfBinds // binds in flight, so their watch events need no decoding

	running atomic.Bool   // Run's loop is running (UsageNow)
	exited  chan struct{} // closed when Run returns

	// Owned by the loop goroutine.
	cache       *Cache
	queue       *Queue
	next        int // where the next search starts
	podsSynced  bool
	nodesSynced bool
	nextMaint   time.Time
	nominated   map[string]string // pod key → node it preempted on
}

// New returns a Scheduler for cfg, or cfg's validation error.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Scoring == "" {
		cfg.Scoring = LeastAllocated
	}
	if cfg.NodeGrace == 0 {
		cfg.NodeGrace = DefaultNodeGrace
	}
	if cfg.Binders == 0 {
		cfg.Binders = DefaultBinders
	}
	if cfg.AssumeTTL == 0 {
		cfg.AssumeTTL = DefaultAssumeTTL
	}
	m := &Metrics{}
	return &Scheduler{
		cfg:       cfg,
		store:     cfg.Store,
		clk:       cfg.Clock,
		log:       cfg.Logger,
		algo:      Algorithm{Scoring: cfg.Scoring, Percentage: cfg.PercentageOfNodesToScore, Workers: cfg.Workers},
		metrics:   m,
		in:        newInbox[message](),
		binds:     newInbox[bindRequest](),
		fx:        newEffects(cfg.Recorder, func() { m.EffectsDropped.Add(1) }),
		self:      newSelfBinds(),
		cache:     NewCache(cfg.AssumeTTL),
		queue:     NewQueue(),
		nominated: make(map[string]string),
		exited:    make(chan struct{}),
	}, nil
}

// Metrics returns the scheduler's live counters.
func (s *Scheduler) Metrics() *Metrics { return s.metrics }

// Run schedules until ctx ends, then waits for its goroutines (binds in
// flight finish or fail with ctx) and returns nil. It must be called once.
func (s *Scheduler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	s.running.Store(true)
	defer func() {
		s.running.Store(false)
		close(s.exited)
		cancel()
		wg.Wait()
	}()
	wg.Go(func() { s.inform(ctx, "nodes") })
	wg.Go(func() { s.inform(ctx, "pods") })
	for range s.cfg.Binders {
		wg.Go(func() { s.binder(ctx) })
	}
	wg.Go(func() { s.fx.run(ctx) })

	timer := s.clk.NewTimer(time.Hour)
	defer timer.Stop()
	var buf []message
	for {
		buf = s.drain(ctx, buf)
		now := s.clk.Now()
		if !now.Before(s.nextMaint) {
			s.maintain(now)
		}
		if s.podsSynced && s.nodesSynced {
			if qp := s.queue.Pop(now); qp != nil {
				s.scheduleOne(ctx, qp)
				continue
			}
		}
		s.metrics.setQueue(s.queue)
		wake := s.nextMaint
		if t, ok := s.queue.NextWake(); ok && t.Before(wake) {
			wake = t
		}
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(max(wake.Sub(now), 0))
		select {
		case <-ctx.Done():
			return nil
		case <-s.in.notify:
		case <-timer.C():
		}
	}
}

// drain applies every pending message.
func (s *Scheduler) drain(ctx context.Context, buf []message) []message {
	msgs := s.in.take(buf)
	if len(msgs) == 0 {
		return msgs
	}
	now := s.clk.Now()
	for i := range msgs {
		s.apply(ctx, &msgs[i], now)
		msgs[i] = message{}
	}
	return msgs[:0]
}

func (s *Scheduler) apply(ctx context.Context, m *message, now time.Time) {
	switch m.kind {
	case msgPod:
		s.onPod(m.pod, now)
	case msgPodDeleted:
		s.onPodDeleted(m.pod.Key, now)
	case msgPods:
		s.replacePods(m.pods, now)
		s.podsSynced = true
	case msgNode:
		s.onNode(m.node, now)
	case msgNodeDeleted:
		s.cache.RemoveNode(m.node.Name)
	case msgNodes:
		s.replaceNodes(m.nodes, now)
		s.nodesSynced = true
	case msgBound:
		s.onBound(ctx, m, now)
	case msgUsage:
		m.usage <- s.usage()
	}
}

// responsible reports whether this scheduler binds p.
func responsible(p *api.Pod) bool {
	n := p.Spec.SchedulerName
	return n == "" || n == DefaultSchedulerName || n == SkiffSchedulerName
}

func finished(p *api.Pod) bool {
	return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
}

func (s *Scheduler) onPod(pi *PodInfo, now time.Time) {
	p := pi.Pod
	switch {
	case finished(p):
		s.onPodDeleted(pi.Key, now) // a finished pod frees its node
	case p.Spec.NodeName != "":
		s.queue.Delete(pi.Key)
		s.cache.AddPod(pi)
	case p.DeletionTimestamp != nil || !responsible(p):
		s.queue.Delete(pi.Key)
	case s.cache.IsAssumed(pi.Key) && !s.queue.Has(pi.Key):
		// Bound by us, binding not seen yet: nothing to do.
	default:
		s.queue.Add(pi, now)
	}
}

func (s *Scheduler) onPodDeleted(key string, now time.Time) {
	s.queue.Delete(key)
	delete(s.nominated, key)
	if s.cache.RemovePod(key) {
		s.queue.MoveAll(now)
	}
}

// nodeFacts are the parts of a node whose change may let pods fit.
type nodeFacts struct {
	alloc                   Resources
	pods                    int64
	ready, mem, disk, pid   bool
	unschedulable, hasLabel bool
}

func factsOf(ni *NodeInfo) nodeFacts {
	return nodeFacts{ni.Allocatable, ni.AllowedPods, ni.Ready, ni.MemoryPressure, ni.DiskPressure, ni.PIDPressure, ni.Unschedulable, len(ni.Labels) > 0}
}

func (s *Scheduler) onNode(n *api.Node, now time.Time) {
	old := s.cache.Node(n.Name)
	if old == nil {
		s.cache.SetNode(n)
		s.queue.MoveAll(now)
		return
	}
	before, labels, taints := factsOf(old), old.Labels, old.Taints
	s.cache.SetNode(n)
	ni := s.cache.Node(n.Name)
	if factsOf(ni) != before || !maps.Equal(labels, ni.Labels) || !reflect.DeepEqual(taints, ni.Taints) {
		s.queue.MoveAll(now)
	}
}

func (s *Scheduler) replacePods(pods []*PodInfo, now time.Time) {
	live := make(map[string]bool, len(pods))
	for _, pi := range pods {
		live[pi.Key] = true
	}
	for _, key := range s.cache.PodKeys() {
		if !live[key] && !s.cache.IsAssumed(key) {
			s.cache.RemovePod(key)
		}
	}
	for key := range s.queue.pods {
		if !live[key] {
			s.queue.Delete(key)
		}
	}
	for _, pi := range pods {
		s.onPod(pi, now)
	}
	s.queue.MoveAll(now)
}

func (s *Scheduler) replaceNodes(nodes []*api.Node, now time.Time) {
	live := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		live[n.Name] = true
		s.cache.SetNode(n)
	}
	for _, name := range s.cache.NodeNames() {
		if !live[name] {
			s.cache.RemoveNode(name)
		}
	}
	s.queue.MoveAll(now)
}

// maintain expires unconfirmed assumptions and applies node liveness.
func (s *Scheduler) maintain(now time.Time) {
	s.nextMaint = now.Add(maintainInterval)
	moved := false
	if exp := s.cache.Expire(now); len(exp) > 0 {
		s.metrics.Expired.Add(int64(len(exp)))
		s.log.Warn("scheduler dropped assumed pods never confirmed", "pods", exp)
		moved = true
	}
	if s.cfg.Liveness != nil {
		for _, ni := range s.cache.Snapshot().Nodes {
			last, known := s.cfg.Liveness(ni.Name)
			stale := !livenessReady(last, known, now, s.cfg.NodeGrace)
			if ni.Stale && !stale {
				moved = true
			}
			s.cache.SetStale(ni, stale)
		}
	}
	if moved {
		s.queue.MoveAll(now)
	}
}

// scheduleOne runs one scheduling cycle for qp: decide, assume, and hand
// the binding to the binders; or record why it fits nowhere and try
// preemption.
func (s *Scheduler) scheduleOne(ctx context.Context, qp *QueuedPod) {
	now := qp.Popped
	pi := qp.PodInfo
	snap := s.cache.Snapshot()
	d, cands, err := s.algo.Schedule(snap, pi, s.next)
	if err != nil {
		var fe *FitError
		if !errors.As(err, &fe) {
			s.metrics.Errors.Add(1)
			s.queue.Requeue(qp, false, now)
			return
		}
		s.preempt(pi, cands, fe)
		s.metrics.Unschedulable.Add(1)
		s.queue.Requeue(qp, true, now)
		s.reportUnschedulable(pi, fe, now)
		return
	}
	s.next = d.Next
	if err := s.cache.AssumePod(pi, d.Node); err != nil {
		s.metrics.Errors.Add(1)
		s.log.Warn("scheduler could not assume pod", "pod", pi.Key, "err", err)
		s.queue.Requeue(qp, false, now)
		return
	}
	s.binds.put(bindRequest{qp: qp, pod: pi.Pod, node: d.Node})
}

// onBound applies a binder's result.
func (s *Scheduler) onBound(ctx context.Context, m *message, now time.Time) {
	key := m.qp.Key
	if m.err == nil {
		s.cache.FinishBinding(key, m.at)
		s.queue.Done(key)
		delete(s.nominated, key)
		s.metrics.Scheduled.Add(1)
		s.metrics.E2E.Observe(m.at.Sub(m.qp.Added))
		s.metrics.Attempt.Observe(m.at.Sub(m.qp.Popped))
		pod := m.qp.Pod
		s.fx.event(pod, api.EventTypeNormal, "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, m.dest))
		return
	}
	s.cache.ForgetPod(key)
	s.queue.MoveAll(now) // the room it held is free again
	switch {
	case errors.Is(m.err, storage.ErrNotFound):
		s.queue.Delete(key)
		return
	case errors.Is(m.err, storage.ErrConflict):
		s.metrics.BindConflicts.Add(1)
	default:
		s.metrics.Errors.Add(1)
		if ctx.Err() == nil {
			s.log.Warn("scheduler bind failed", "pod", key, "node", m.dest, "err", m.err)
		}
	}
	s.queue.Requeue(m.qp, false, now)
}
