package controllers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// Defaults of zero Config fields.
const (
	DefaultNodeMonitorGrace       = 40 * time.Second
	DefaultPodEvictionTimeout     = 60 * time.Second
	DefaultNodeMonitorPeriod      = 5 * time.Second
	DefaultEvictionRate           = 0.1  // nodes per second
	DefaultSecondaryEvictionRate  = 0.01 // nodes per second, large clusters in partial disruption
	DefaultUnhealthyThreshold     = 0.55
	DefaultLargeClusterSize       = 50
	DefaultTerminatedPodThreshold = 1000
	DefaultGCInterval             = time.Minute
	DefaultOrphanNodeQuarantine   = 40 * time.Second
	DefaultWorkers                = 2
)

// EventRecorder records an event about an object; *events.Recorder
// implements it. It may block and reports no error.
type EventRecorder interface {
	Eventf(ctx context.Context, obj api.Object, typ, reason, format string, args ...any)
}

// Sweep is a periodic clean-up the garbage collector runs every
// GCInterval: Run deletes what has expired and returns how many it
// deleted.
type Sweep struct {
	Name string
	Run  func(ctx context.Context) (int, error)
}

// Config configures the controllers.
type Config struct {
	// Store is read (list and watch) and written. Required.
	Store *storage.Store
	// Clock defaults to the wall clock; Logger to discarding.
	Clock  clock.Clock
	Logger *slog.Logger
	// Recorder returns the event recorder of a component
	// ("node-controller", …); nil records no events.
	Recorder func(component string) EventRecorder
	// Liveness returns a node's last heartbeat seen since the server
	// started (apiserver.Liveness.Last); nil uses only stored heartbeats.
	Liveness func(node string) (time.Time, bool)
	// NodeMonitorGrace: a node silent for longer is unreachable.
	NodeMonitorGrace time.Duration
	// PodEvictionTimeout: how long pods stay on an unreachable node before
	// they are evicted.
	PodEvictionTimeout time.Duration
	// NodeMonitorPeriod is how often node health is checked.
	NodeMonitorPeriod time.Duration
	// EvictionRate is how many nodes per second may have their pods
	// evicted; SecondaryEvictionRate applies instead when at least
	// UnhealthyThreshold of the nodes are unhealthy in a cluster of more
	// than LargeClusterSize nodes (smaller clusters then stop evicting, as
	// they do when every node is unhealthy).
	EvictionRate          float64
	SecondaryEvictionRate float64
	UnhealthyThreshold    float64
	LargeClusterSize      int
	// TerminatedPodThreshold is how many finished pods are kept; older
	// ones beyond it are deleted.
	TerminatedPodThreshold int
	// GCInterval is how often the collector rescans everything and runs
	// the Sweeps.
	GCInterval time.Duration
	Sweeps     []Sweep
	// Workers is how many keys each controller reconciles at once.
	Workers int
	// Bulk, if set, is told before a controller creates n pods at once
	// (a Deployment or DaemonSet of thousands), so the server can make
	// room for the writes that follow (server.GCBurst).
	Bulk func(n int)
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("store is required"))
	}
	if c.NodeMonitorGrace < 0 || c.PodEvictionTimeout < 0 || c.NodeMonitorPeriod < 0 || c.GCInterval < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if c.EvictionRate < 0 || c.SecondaryEvictionRate < 0 || c.UnhealthyThreshold < 0 || c.UnhealthyThreshold > 1 {
		errs = append(errs, errors.New("eviction rates must not be negative and the unhealthy threshold must be in [0, 1]"))
	}
	if c.LargeClusterSize < 0 || c.TerminatedPodThreshold < 0 || c.Workers < 0 {
		errs = append(errs, errors.New("large cluster size, terminated pod threshold and workers must not be negative"))
	}
	for i, s := range c.Sweeps {
		if s.Run == nil {
			errs = append(errs, fmt.Errorf("sweep %d (%q) has no Run", i, s.Name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("controllers config: %w", errors.Join(errs...))
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.NodeMonitorGrace, DefaultNodeMonitorGrace)
	def(&c.PodEvictionTimeout, DefaultPodEvictionTimeout)
	def(&c.NodeMonitorPeriod, DefaultNodeMonitorPeriod)
	def(&c.GCInterval, DefaultGCInterval)
	if c.EvictionRate == 0 {
		c.EvictionRate = DefaultEvictionRate
	}
	if c.SecondaryEvictionRate == 0 {
		c.SecondaryEvictionRate = DefaultSecondaryEvictionRate
	}
	if c.UnhealthyThreshold == 0 {
		c.UnhealthyThreshold = DefaultUnhealthyThreshold
	}
	if c.LargeClusterSize == 0 {
		c.LargeClusterSize = DefaultLargeClusterSize
	}
	if c.TerminatedPodThreshold == 0 {
		c.TerminatedPodThreshold = DefaultTerminatedPodThreshold
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	return c
}

func (c Config) recorder(component string) EventRecorder {
	if c.Recorder == nil {
		return nopRecorder{}
	}
	if r := c.Recorder(component); r != nil {
		return r
	}
	return nopRecorder{}
}

type nopRecorder struct{}

func (nopRecorder) Eventf(context.Context, api.Object, string, string, string, ...any) {}

// Informers are the shared informers the controllers read.
type Informers struct {
	Pods, Nodes, Deployments, DaemonSets *Informer
	ReplicaSets, Jobs, CronJobs          *Informer
	Services, EndpointSlices             *Informer
	PodDisruptionBudgets                 *Informer
	StatefulSets, PersistentVolumeClaims *Informer
	PersistentVolumes, StorageClasses    *Informer
}

func (in *Informers) all() []*Informer {
	return []*Informer{in.Pods, in.Nodes, in.Deployments, in.DaemonSets, in.ReplicaSets, in.Jobs, in.CronJobs, in.Services, in.EndpointSlices, in.PodDisruptionBudgets,
		in.StatefulSets, in.PersistentVolumeClaims, in.PersistentVolumes, in.StorageClasses}
}

// Manager runs every controller over one set of informers. Create it with
// New and start it with Run (once).
type Manager struct {
	cfg       Config
	informers *Informers
	Nodes     *NodeLifecycle
	Deploy    *DeploymentController
	Daemons   *DaemonSetController
	GC        *GarbageCollector
	Replicas  *ReplicaSetController
	Jobs      *JobController
	CronJobs  *CronJobController
	Endpoints *EndpointsController
	Budgets   *DisruptionController
	Stateful  *StatefulSetController
	LocalPath *LocalPathController
}

// New builds the informers and controllers of cfg.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger
	in := &Informers{
		Pods:        NewInformer(cfg.Store, "pods", cfg.Clock, log),
		Nodes:       NewInformer(cfg.Store, "nodes", cfg.Clock, log),
		Deployments: NewInformer(cfg.Store, "deployments", cfg.Clock, log),
		DaemonSets:  NewInformer(cfg.Store, "daemonsets", cfg.Clock, log),
		ReplicaSets: NewInformer(cfg.Store, "replicasets", cfg.Clock, log),
		Jobs:        NewInformer(cfg.Store, "jobs", cfg.Clock, log),
		CronJobs:    NewInformer(cfg.Store, "cronjobs", cfg.Clock, log),

		Services:               NewInformer(cfg.Store, "services", cfg.Clock, log),
		EndpointSlices:         NewInformer(cfg.Store, "endpointslices", cfg.Clock, log),
		PodDisruptionBudgets:   NewInformer(cfg.Store, "poddisruptionbudgets", cfg.Clock, log),
		StatefulSets:           NewInformer(cfg.Store, "statefulsets", cfg.Clock, log),
		PersistentVolumeClaims: NewInformer(cfg.Store, "persistentvolumeclaims", cfg.Clock, log),
		PersistentVolumes:      NewInformer(cfg.Store, "persistentvolumes", cfg.Clock, log),
		StorageClasses:         NewInformer(cfg.Store, "storageclasses", cfg.Clock, log),
	}
	in.Pods.AddIndex(indexByNamespace, byNamespace)
	in.Services.AddIndex(indexByNamespace, byNamespace)
	in.EndpointSlices.AddIndex(indexByService, slicesByService)
	in.Pods.AddIndex(indexByOwner, podsByOwner)
	in.ReplicaSets.AddIndex(indexByOwner, podsByOwner)
	in.Jobs.AddIndex(indexByOwner, podsByOwner)
	in.Pods.AddIndex(indexByNode, podsByNode)
	w := podWriter{store: cfg.Store, pods: in.Pods, bulk: cfg.Bulk}
	m := &Manager{cfg: cfg, informers: in}
	m.Nodes = newNodeLifecycle(cfg, in, w)
	m.Deploy = newDeploymentController(cfg, in, w)
	m.Daemons = newDaemonSetController(cfg, in, w)
	m.GC = newGarbageCollector(cfg, in, w)
	m.Replicas = newReplicaSetController(cfg, in, w)
	m.Jobs = newJobController(cfg, in, w)
	m.CronJobs = newCronJobController(cfg, in)
	m.Endpoints = newEndpointsController(cfg, in)
	m.Budgets = newDisruptionController(cfg, in)
	m.Stateful = newStatefulSetController(cfg, in, w)
	m.LocalPath = newLocalPathController(cfg, in)
	return m, nil
}

// workers returns every controller's queue and reconcile function.
func (m *Manager) workers() []*worker {
	return []*worker{m.Deploy.worker(), m.Daemons.worker(), m.GC.worker(), m.Nodes.worker(), m.Replicas.worker(), m.Jobs.worker(), m.CronJobs.worker(), m.Budgets.worker(),
		m.Stateful.worker(), m.LocalPath.worker(), m.Endpoints.worker()}
}

// QueueMetrics returns every controller's work queue figures, for
// /metrics. Safe to call at any time.
func (m *Manager) QueueMetrics() []QueueMetrics {
	ws := m.workers()
	out := make([]QueueMetrics, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.queue.metrics(w.name))
	}
	return out
}

// Informers returns the shared informers (for the test harness).
func (m *Manager) Informers() *Informers { return m.informers }

// Run runs the informers and controllers until ctx ends, then waits for
// them and returns nil.
func (m *Manager) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, i := range m.informers.all() {
		wg.Go(func() { i.Run(ctx) })
	}
	// Controllers start once every cache holds a full list, so none acts
	// on a partial view (a Deployment whose pods are not listed yet would
	// look short of replicas).
	for _, i := range m.informers.all() {
		select {
		case <-ctx.Done():
			return nil
		case <-i.HasSynced():
		}
	}
	m.Nodes.start(m.cfg.Clock.Now())
	for _, q := range m.workers() {
		for range m.cfg.Workers {
			wg.Go(func() { q.run(ctx, m.cfg.Logger) })
		}
	}
	wg.Go(func() { m.Nodes.monitorLoop(ctx) })
	wg.Go(func() { m.GC.sweepLoop(ctx) })
	<-ctx.Done()
	return nil
}

// worker is one controller's queue and reconcile function.
type worker struct {
	name  string
	queue *Queue
	sync  func(ctx context.Context, key string) (requeueAfter time.Duration, err error)
}

// run reconciles keys until ctx ends. A failed key is retried with
// backoff; a key that asks for a later look is queued after that delay.
func (w *worker) run(ctx context.Context, log *slog.Logger) {
	for {
		key, ok := w.queue.Get(ctx)
		if !ok {
			return
		}
		w.process(ctx, key, log)
	}
}

// process reconciles key once.
func (w *worker) process(ctx context.Context, key string, log *slog.Logger) {
	start := w.queue.clk.Now()
	after, err := w.sync(ctx, key)
	w.queue.work.Observe(w.queue.clk.Now().Sub(start).Seconds())
	switch {
	case err != nil && ctx.Err() == nil:
		if !errors.Is(err, storage.ErrConflict) {
			log.Warn("reconcile failed", "controller", w.name, "key", key, "err", err)
		}
		w.queue.AddRateLimited(key)
	case err == nil:
		w.queue.Forget(key)
		if after > 0 {
			// The reconcile measured after from the time it started.
			w.queue.AddAt(key, start.Add(after))
		}
	}
	w.queue.Done(key)
}

// eventf records an event about a shallow copy of obj: objects from the
// informers are shared, and a recorder may set the copy's TypeMeta. Every
// kind is copied the same way (api objects are pointers to structs), so
// no kind's events are dropped for want of a case.
func eventf(ctx context.Context, r EventRecorder, obj api.Object, typ, reason, format string, args ...any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	r.Eventf(ctx, c.Interface().(api.Object), typ, reason, format, args...)
}
