package usage

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

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
	Scan(ctx context.Context, resource string, opts storage.ListOptions, fn func(value []byte) error) (int64, error)
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
	// Phase delays every sample after the first by this much, in
	// [0, Interval): samples at the start, then Phase+Interval after it,
	// and every Interval on. A sample scans every node and pod in the
	// store; the server sets half an interval, so that its samples fall
	// between the store's once-a-minute maintenance rather than on it
	// (both tick a minute from the start: together, with a collection,
	// they made a fleet's heartbeats slow for a second every minute).
	Phase time.Duration
	// Pause, when set, spreads a sample's scan: after every PauseEvery
	// objects read, the sample waits Pause on the clock. A sample of
	// 10,000 nodes and their pods is about a quarter of a core-second;
	// taken at once, on a server whose cores its fleet keeps busy, it
	// held the heartbeats of that second back (round thirty-three). The
	// server sets a pause that keeps a sample to about a fifth of a core.
	Pause time.Duration
	// Source, when set, is asked first for every node's figures from
	// memory (the server's: its scheduler's cache, while it leads); the
	// sample scans the store only when it answers false.
	Source func(ctx context.Context) ([]NodeFigures, bool)
}

// NodeFigures is one node's figures as a Source gives them: CPU in
// milli-CPUs, memory in bytes, the pods that have not finished.
type NodeFigures struct {
	Name                                         string
	Ready                                        bool
	Pods                                         int64
	CPURequestedMilli, CPUAllocatableMilli       int64
	MemoryRequestedBytes, MemoryAllocatableBytes int64
}

// PauseEvery is how many objects a sample reads between pauses
// (Config.Pause): about 5 ms of a core.
const PauseEvery = 256

// Recorder samples every node periodically and keeps the latest Keep
// samples of each. Its methods are safe for concurrent use.
type Recorder struct {
	store    Lister
	clk      clock.Clock
	log      *slog.Logger
	interval time.Duration
	phase    time.Duration
	pause    time.Duration
	source   func(ctx context.Context) ([]NodeFigures, bool)
	keep     int

	mu sync.RWMutex
	// rounds counts the samples taken; times[r%keep] is the time of
	// sample r, for the latest keep of them.
	rounds uint64
	times  []time.Time
	series map[string]*series
}

// series is one node's points: a node is in every sample from its first
// (first) to the latest, or it is dropped. Until keep points are held
// they are in order; then those of sample r are at (r-first)%keep,
// overwritten in place: a full history allocates nothing more.
type series struct {
	first uint64
	pts   []entry
}

// New returns a Recorder for cfg.
func New(cfg Config) (*Recorder, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("usage: config needs a store")
	}
	if cfg.Interval < 0 || cfg.Keep < 0 {
		return nil, fmt.Errorf("usage: interval and keep must not be negative")
	}
	r := &Recorder{store: cfg.Store, clk: clock.Or(cfg.Clock), log: cfg.Logger, interval: cfg.Interval, phase: cfg.Phase, pause: cfg.Pause, source: cfg.Source, keep: cfg.Keep, series: map[string]*series{}}
	if r.interval == 0 {
		r.interval = DefaultInterval
	}
	if r.phase < 0 || r.phase >= r.interval {
		return nil, fmt.Errorf("usage: phase %v is outside [0, interval %v)", r.phase, r.interval)
	}
	if r.pause < 0 {
		return nil, fmt.Errorf("usage: pause %v is negative", r.pause)
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

// Run samples at once, then Phase+Interval later and every Interval
// on, until ctx ends. A failed sample is logged and retried at the next
// tick; a tick missed while a sample ran is skipped. It returns ctx's
// error.
func (r *Recorder) Run(ctx context.Context) error {
	next := r.clk.Now().Add(r.phase)
	for {
		if err := r.SampleNow(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("usage sample failed", "err", err)
		}
		now := r.clk.Now()
		for next = next.Add(r.interval); !next.After(now); next = next.Add(r.interval) {
		}
		t := r.clk.NewTimer(next.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// SampleNow records one sample of each node: from the Source when it
// answers, else from a scan of the store's nodes and pods. Nodes that
// are gone lose their history. With a Pause it takes its
// time (Config.Pause); it returns ctx's error if ctx ends meanwhile, and
// records nothing.
func (r *Recorder) SampleNow(ctx context.Context) error {
	if r.source != nil {
		if figs, ok := r.source(ctx); ok {
			r.record(fromSource(figs), r.clk.Now())
			return nil
		}
	}
	p := pacer{ctx: ctx, clk: r.clk, pause: r.pause}
	nodes, err := scanAll(ctx, r.store, "nodes", decodeNode, &p)
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	pods, err := scanAll(ctx, r.store, "pods", decodePod, &p)
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	r.record(compute(nodes, pods), r.clk.Now())
	return nil
}

// fromSource turns a Source's figures into a sample's entries.
func fromSource(figs []NodeFigures) map[string]entry {
	out := make(map[string]entry, len(figs))
	for _, f := range figs {
		out[f.Name] = entry{
			cpuRequested: f.CPURequestedMilli, cpuAllocatable: f.CPUAllocatableMilli,
			memoryRequested: f.MemoryRequestedBytes, memoryAllocatable: f.MemoryAllocatableBytes,
			pods: int32(min(f.Pods, math.MaxInt32)), ready: f.Ready,
		}
	}
	return out
}

// scanAll decodes every stored object of resource with decode, pacing
// the scan with p.
func scanAll[T any](ctx context.Context, st Lister, resource string, decode func([]byte) (T, error), p *pacer) ([]T, error) {
	var out []T
	_, err := st.Scan(ctx, resource, storage.ListOptions{}, func(raw []byte) error {
		v, err := decode(raw)
		out = append(out, v)
		if err != nil {
			return err
		}
		return p.step()
	})
	return out, err
}

// pacer waits pause after every PauseEvery objects of one sample.
type pacer struct {
	ctx   context.Context
	clk   clock.Clock
	pause time.Duration
	n     int
}

// step counts an object read and, after every PauseEvery of them, waits
// the pause: ctx's error if it ends first.
func (p *pacer) step() error {
	if p.pause <= 0 {
		return nil
	}
	if p.n++; p.n%PauseEvery != 0 {
		return nil
	}
	t := p.clk.NewTimer(p.pause)
	defer t.Stop()
	select {
	case <-p.ctx.Done():
		return p.ctx.Err()
	case <-t.C():
		return nil
	}
}

// record adds one sample of each node in pts, taken at now.
func (r *Recorder) record(pts map[string]entry, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	round := r.rounds
	if len(r.times) < r.keep {
		r.times = append(r.times, now)
	} else {
		r.times[round%uint64(r.keep)] = now
	}
	r.rounds++
	for name := range r.series {
		if _, ok := pts[name]; !ok {
			delete(r.series, name)
		}
	}
	for name, pt := range pts {
		ser := r.series[name]
		if ser == nil {
			ser = &series{first: round}
			r.series[name] = ser
		}
		if len(ser.pts) < r.keep {
			if len(ser.pts) == cap(ser.pts) {
				// Grow by doubling up to keep, not past it.
				ser.pts = slices.Grow(ser.pts, min(max(2*cap(ser.pts), 4), r.keep)-len(ser.pts))[:len(ser.pts)]
			}
			ser.pts = append(ser.pts, pt)
			continue
		}
		ser.pts[(round-ser.first)%uint64(r.keep)] = pt
	}
}

// Samples returns a copy of node's samples, oldest first, and whether the
// node has any.
func (r *Recorder) Samples(node string) ([]Sample, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ser, ok := r.series[node]
	if !ok {
		return nil, false
	}
	n := uint64(len(ser.pts))
	out := make([]Sample, 0, n)
	for round := r.rounds - n; round < r.rounds; round++ {
		pt := ser.pts[(round-ser.first)%uint64(r.keep)]
		out = append(out, Sample{
			Time: r.times[round%uint64(r.keep)], Ready: pt.ready, Pods: int(pt.pods),
			CPURequestedMilli: pt.cpuRequested, CPUAllocatableMilli: pt.cpuAllocatable,
			MemoryRequestedBytes: pt.memoryRequested, MemoryAllocatableBytes: pt.memoryAllocatable,
		})
	}
	return out, true
}
