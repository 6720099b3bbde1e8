package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/internal/clock"
)

// PodLifecycleEventType is a kind of pod lifecycle event.
type PodLifecycleEventType string

// Pod lifecycle event types, as in the kubelet's PLEG.
const (
	ContainerStarted PodLifecycleEventType = "ContainerStarted"
	ContainerDied    PodLifecycleEventType = "ContainerDied"
	ContainerRemoved PodLifecycleEventType = "ContainerRemoved"
	ContainerChanged PodLifecycleEventType = "ContainerChanged"
	SandboxChanged   PodLifecycleEventType = "SandboxChanged"
)

// PodLifecycleEvent says something happened to a pod's containers.
type PodLifecycleEvent struct {
	PodUID string
	Type   PodLifecycleEventType
	// Data is the container ID, or "" for sandbox events.
	Data string
}

// pleg is the pod lifecycle event generator: it relists the runtime,
// compares with the previous relist and emits one event per container
// state change. It also keeps the last runtime view of every pod, which
// syncPod and housekeeping read. relist is serialised; events go to a
// buffered channel and are dropped when it is full (the periodic resync
// covers them).
type pleg struct {
	rt     runtime.Runtime
	clock  clock.Clock
	log    *slog.Logger
	events chan PodLifecycleEvent

	// Relists are coalesced: a caller needs one that starts after its
	// call, so callers that arrive while one runs share the next.
	relistMu sync.Mutex    // guards the fields below
	running  bool          // a relist is under way
	started  uint64        // relists started
	finished uint64        // the latest relist that ended (its number)
	lastErr  error         // that relist's error
	wake     chan struct{} // closed and replaced when a relist ends
	waiting  int           // callers waiting for a relist

	mu       sync.Mutex
	pods     map[string]*runtime.PodStatus // last relist, by UID
	relisted time.Time
	dropped  int
	// Views are ordered by when their reading began: seq counts the
	// beginnings, relistSeq is the installed relist's, podSeq the latest
	// single-pod read of each pod (fresh) since. An older view never
	// replaces a newer one.
	seq       uint64
	relistSeq uint64
	podSeq    map[string]uint64
}

func newPLEG(rt runtime.Runtime, c clock.Clock, log *slog.Logger) *pleg {
	return &pleg{rt: rt, clock: c, log: log, events: make(chan PodLifecycleEvent, 1000), pods: map[string]*runtime.PodStatus{}, podSeq: map[string]uint64{}, wake: make(chan struct{})}
}

// run relists every period and whenever the runtime reports an event,
// until ctx ends.
func (p *pleg) run(ctx context.Context, period time.Duration) {
	var rtEvents <-chan runtime.Event
	if ch, err := p.rt.Events(ctx); err != nil {
		p.log.Warn("runtime events unavailable; relisting only", "err", err)
	} else {
		rtEvents = ch
	}
	t := p.clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case _, ok := <-rtEvents:
			if !ok {
				rtEvents = nil
			}
		}
		if err := p.relist(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("relist failed", "err", err)
		}
	}
}

// relist returns once a relist that started after the call has ended,
// with its error. Callers that arrive while a relist runs wait for it to
// end and share the next one: a burst of pod syncs that each want a
// fresh view costs two listings of the runtime, not one each. Waiting
// ends with ctx.
func (p *pleg) relist(ctx context.Context) error {
	p.relistMu.Lock()
	need := p.started + 1
	for {
		if p.finished >= need {
			err := p.lastErr
			p.relistMu.Unlock()
			return err
		}
		if !p.running {
			p.running = true
			p.started++
			gen := p.started
			p.relistMu.Unlock()
			err := p.relistOnce(ctx)
			p.relistMu.Lock()
			p.running = false
			if err == nil || ctx.Err() == nil {
				// A relist cut short by this caller's own ctx answers
				// no one else: another waiter starts the next.
				p.finished, p.lastErr = gen, err
			}
			close(p.wake)
			p.wake = make(chan struct{})
			if p.finished < need {
				p.relistMu.Unlock()
				return err
			}
			continue
		}
		wake := p.wake
		p.waiting++
		p.relistMu.Unlock()
		select {
		case <-ctx.Done():
			p.relistMu.Lock()
			p.waiting--
			p.relistMu.Unlock()
			return ctx.Err()
		case <-wake:
		}
		p.relistMu.Lock()
		p.waiting--
	}
}

// waiters is how many callers wait for a relist (for tests).
func (p *pleg) waiters() int {
	p.relistMu.Lock()
	defer p.relistMu.Unlock()
	return p.waiting
}

// relistOnce lists the runtime, updates the cache and emits events.
// Only relist calls it, one at a time.
func (p *pleg) relistOnce(ctx context.Context) error {
	p.mu.Lock()
	p.seq++
	begun := p.seq
	p.mu.Unlock()
	list, err := p.rt.ListPods(ctx)
	if err != nil {
		return fmt.Errorf("list runtime pods: %w", err)
	}
	now := p.clock.Now()
	cur := make(map[string]*runtime.PodStatus, len(list))
	for i := range list {
		cur[list[i].UID] = &list[i]
	}
	var events []PodLifecycleEvent
	p.mu.Lock()
	old := p.pods
	for uid, s := range p.podSeq {
		if s < begun {
			delete(p.podSeq, uid)
			continue
		}
		// Read on its own after this listing began: that view is newer.
		if v, ok := old[uid]; ok {
			cur[uid] = v
		} else {
			delete(cur, uid)
		}
	}
	p.pods = cur
	p.relisted = now
	p.relistSeq = begun
	for uid, np := range cur {
		events = append(events, diffPod(uid, old[uid], np)...)
	}
	for uid, op := range old {
		if _, ok := cur[uid]; !ok {
			events = append(events, diffPod(uid, op, nil)...)
		}
	}
	p.mu.Unlock()
	for _, e := range events {
		p.emit(e)
	}
	return nil
}

func (p *pleg) emit(e PodLifecycleEvent) {
	select {
	case p.events <- e:
	default:
		p.mu.Lock()
		p.dropped++
		p.mu.Unlock()
	}
}

// diffPod compares two runtime views of one pod (either may be nil).
func diffPod(uid string, old, cur *runtime.PodStatus) []PodLifecycleEvent {
	states := func(ps *runtime.PodStatus) map[string]runtime.ContainerState {
		m := map[string]runtime.ContainerState{}
		if ps != nil {
			for _, c := range ps.Containers {
				m[c.ID] = c.State
			}
		}
		return m
	}
	o, n := states(old), states(cur)
	var out []PodLifecycleEvent
	if (old != nil && old.Sandbox != nil) != (cur != nil && cur.Sandbox != nil) {
		out = append(out, PodLifecycleEvent{PodUID: uid, Type: SandboxChanged})
	}
	for id, ns := range n {
		was, seen := o[id]
		if seen && was == ns {
			continue
		}
		switch ns {
		case runtime.StateRunning:
			out = append(out, PodLifecycleEvent{PodUID: uid, Type: ContainerStarted, Data: id})
		case runtime.StateExited:
			out = append(out, PodLifecycleEvent{PodUID: uid, Type: ContainerDied, Data: id})
		default:
			out = append(out, PodLifecycleEvent{PodUID: uid, Type: ContainerChanged, Data: id})
		}
	}
	for id := range o {
		if _, ok := n[id]; !ok {
			out = append(out, PodLifecycleEvent{PodUID: uid, Type: ContainerRemoved, Data: id})
		}
	}
	return out
}

// fresh reads pod uid's runtime view afresh — that pod's containers only,
// whatever else runs — updates the cache and emits its events, and
// returns it (nil when the runtime holds nothing of it). syncPod uses it
// so that it never decides on a view older than its own previous actions.
func (p *pleg) fresh(ctx context.Context, uid string) (*runtime.PodStatus, error) {
	p.mu.Lock()
	p.seq++
	begun := p.seq
	p.mu.Unlock()
	ps, err := p.rt.PodStatus(ctx, uid)
	if err != nil {
		return nil, fmt.Errorf("read runtime pod %s: %w", uid, err)
	}
	var events []PodLifecycleEvent
	p.mu.Lock()
	if begun > p.relistSeq && begun > p.podSeq[uid] {
		p.podSeq[uid] = begun
		events = diffPod(uid, p.pods[uid], ps)
		if ps == nil {
			delete(p.pods, uid)
		} else {
			cp := *ps
			cp.Containers = append([]runtime.ContainerStatus(nil), ps.Containers...)
			p.pods[uid] = &cp
		}
	}
	p.mu.Unlock()
	for _, e := range events {
		p.emit(e)
	}
	return ps, nil
}

// get returns the cached runtime view of pod uid, nil if none.
func (p *pleg) get(uid string) *runtime.PodStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ps := p.pods[uid]; ps != nil {
		cp := *ps
		cp.Containers = append([]runtime.ContainerStatus(nil), ps.Containers...)
		return &cp
	}
	return nil
}

// all returns the cached runtime views of every pod.
func (p *pleg) all() []*runtime.PodStatus {
	p.mu.Lock()
	uids := make([]string, 0, len(p.pods))
	for uid := range p.pods {
		uids = append(uids, uid)
	}
	p.mu.Unlock()
	out := make([]*runtime.PodStatus, 0, len(uids))
	for _, uid := range uids {
		if ps := p.get(uid); ps != nil {
			out = append(out, ps)
		}
	}
	return out
}
