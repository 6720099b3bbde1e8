package usage

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// Defaults of Config.
const (
	DefaultInterval = time.Minute
	DefaultKeep     = 60 // an hour of one-minute samples
)

// Sample is one node's figures at one time. CPU is in milli-CPUs, memory
// in bytes. Requested figures sum the requests of the pods bound to the
// node that have not finished (as the scheduler counts them: the larger of
// the containers' sum and each init container).
type Sample struct {
	Time                   time.Time `json:"time"`
	Ready                  bool      `json:"ready"`
	Pods                   int       `json:"pods"`
	CPURequestedMilli      int64     `json:"cpuRequestedMilli"`
	CPUAllocatableMilli    int64     `json:"cpuAllocatableMilli"`
	MemoryRequestedBytes   int64     `json:"memoryRequestedBytes"`
	MemoryAllocatableBytes int64     `json:"memoryAllocatableBytes"`
}

// Lister is the part of the store the Recorder reads.
type Lister interface {
	List(ctx context.Context, resource string, opts storage.ListOptions) ([]api.Object, int64, error)
}

var _ Lister = (*storage.Store)(nil)

// Config holds what a Recorder needs. Store is required.
type Config struct {
	Store  Lister
	Clock  clock.Clock
	Logger *slog.Logger
	// Interval between samples; default DefaultInterval.
	Interval time.Duration
	// Keep is how many samples are kept per node; default DefaultKeep.
	Keep int
}

// Recorder samples every node periodically and keeps the latest Keep
// samples of each. Its methods are safe for concurrent use.
type Recorder struct {
	store    Lister
	clk      clock.Clock
	log      *slog.Logger
	interval time.Duration
	keep     int

	mu     sync.RWMutex
	series map[string][]Sample // oldest first, at most keep
}

// New returns a Recorder for cfg.
func New(cfg Config) (*Recorder, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("usage: config needs a store")
	}
	if cfg.Interval < 0 || cfg.Keep < 0 {
		return nil, fmt.Errorf("usage: interval and keep must not be negative")
	}
	r := &Recorder{store: cfg.Store, clk: clock.Or(cfg.Clock), log: cfg.Logger, interval: cfg.Interval, keep: cfg.Keep, series: map[string][]Sample{}}
	if r.interval == 0 {
		r.interval = DefaultInterval
	}
	if r.keep == 0 {
		r.keep = DefaultKeep
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// Interval returns the time between samples.
func (r *Recorder) Interval() time.Duration { return r.interval }

// Run samples at once and then every interval until ctx ends. A failed
// sample is logged and retried at the next tick. It returns ctx's error.
func (r *Recorder) Run(ctx context.Context) error {
	t := r.clk.NewTicker(r.interval)
	defer t.Stop()
	for {
		if err := r.SampleNow(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("usage sample failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C():
		}
	}
}

// SampleNow lists nodes and pods and records one sample of each node.
// Nodes that are gone lose their history.
func (r *Recorder) SampleNow(ctx context.Context) error {
	nodeObjs, _, err := r.store.List(ctx, "nodes", storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	podObjs, _, err := r.store.List(ctx, "pods", storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	nodes := make([]*api.Node, 0, len(nodeObjs))
	for _, o := range nodeObjs {
		if n, ok := o.(*api.Node); ok {
			nodes = append(nodes, n)
		}
	}
	pods := make([]*api.Pod, 0, len(podObjs))
	for _, o := range podObjs {
		if p, ok := o.(*api.Pod); ok {
			pods = append(pods, p)
		}
	}
	samples := Compute(nodes, pods, r.clk.Now())
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.series {
		if _, ok := samples[name]; !ok {
			delete(r.series, name)
		}
	}
	for name, s := range samples {
		r.series[name] = appendRing(r.series[name], s, r.keep)
	}
	return nil
}

// appendRing appends s to ss, dropping the oldest beyond keep.
func appendRing(ss []Sample, s Sample, keep int) []Sample {
	if len(ss) >= keep {
		ss = append(ss[:0:0], ss[len(ss)-keep+1:]...)
	}
	return append(ss, s)
}

// Samples returns a copy of node's samples, oldest first, and whether the
// node has any.
func (r *Recorder) Samples(node string) ([]Sample, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ss, ok := r.series[node]
	return append([]Sample(nil), ss...), ok
}

// Compute returns one sample per node at now: a pure function of the
// nodes and pods given.
func Compute(nodes []*api.Node, pods []*api.Pod, now time.Time) map[string]Sample {
	out := make(map[string]Sample, len(nodes))
	for _, n := range nodes {
		s := Sample{Time: now}
		for _, c := range n.Status.Conditions {
			if c.Type == api.NodeReady {
				s.Ready = c.Status == api.ConditionTrue
			}
		}
		if q, ok := n.Status.Allocatable[api.ResourceCPU]; ok {
			s.CPUAllocatableMilli = q.MilliValue()
		}
		if q, ok := n.Status.Allocatable[api.ResourceMemory]; ok {
			s.MemoryAllocatableBytes = q.Value()
		}
		out[n.Name] = s
	}
	for _, p := range pods {
		s, ok := out[p.Spec.NodeName]
		if !ok || p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed {
			continue
		}
		cpu, mem := PodRequests(p)
		s.Pods++
		s.CPURequestedMilli += cpu
		s.MemoryRequestedBytes += mem
		out[p.Spec.NodeName] = s
	}
	return out
}

// PodRequests returns the CPU (milli) and memory (bytes) p requests: the
// sum over its containers, or the largest init container's if larger.
func PodRequests(p *api.Pod) (milliCPU, memory int64) {
	for _, c := range p.Spec.Containers {
		milliCPU += milliCPUOf(c.Resources.Requests)
		memory += memoryOf(c.Resources.Requests)
	}
	for _, c := range p.Spec.InitContainers {
		milliCPU = max(milliCPU, milliCPUOf(c.Resources.Requests))
		memory = max(memory, memoryOf(c.Resources.Requests))
	}
	return milliCPU, memory
}

func milliCPUOf(l api.ResourceList) int64 {
	if q, ok := l[api.ResourceCPU]; ok {
		return q.MilliValue()
	}
	return 0
}

func memoryOf(l api.ResourceList) int64 {
	if q, ok := l[api.ResourceMemory]; ok {
		return q.Value()
	}
	return 0
}
