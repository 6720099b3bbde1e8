package prober

import (
	"context"
	"time"

	"github.com/skiffhq/skiff/api"
)

// worker probes one container of one pod with one probe type. Its fields
// below mu are guarded by Manager.mu.
type worker struct {
	m    *Manager
	key  key
	done chan struct{} // closed by stop
	// wake makes the worker re-read its settings at once (a new
	// container instance or spec).
	wake chan struct{}

	// guarded by Manager.mu
	probe     api.Probe
	container api.Container
	id        string // running instance; "" when none
	startedAt time.Time
	lastRaw   Result    // last raw result on id
	streak    int       // consecutive raw results equal to lastRaw
	onHold    bool      // liveness/startup failed on id: stop probing it
	lastProbe time.Time // when id was last probed (ticks that pile up do not probe twice)
	stopped   bool
}

func newWorker(m *Manager, k key) *worker {
	return &worker{m: m, key: k, done: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// initial is the verdict a new container instance starts with: not ready,
// alive, not started.
func initial(t ProbeType) Result {
	switch t {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// setLocked updates the worker's probe, container spec and instance; a new
// instance starts over with the initial verdict.
func (w *worker) setLocked(p api.Probe, c *api.Container, running Container) {
	changedPeriod := w.probe.PeriodSeconds != p.PeriodSeconds
	w.probe, w.container = p, *c
	if running.ID != w.id {
		w.id, w.startedAt = running.ID, running.StartedAt
		w.lastRaw, w.streak, w.onHold, w.lastProbe = Unknown, 0, false, time.Time{}
		if running.ID != "" {
			w.m.verdicts[w.key] = verdict{id: running.ID, result: initial(w.key.typ)}
		} else {
			delete(w.m.verdicts, w.key)
		}
		changedPeriod = true
	}
	if changedPeriod {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// stop ends the worker (caller holds Manager.mu).
func (w *worker) stop() {
	if !w.stopped {
		w.stopped = true
		close(w.done)
	}
}

// run probes at once and then every period until stopped.
func (w *worker) run(ctx context.Context) {
	w.m.mu.Lock()
	period := secs(w.probe.PeriodSeconds)
	select { // the settings are read now: no extra probe for them
	case <-w.wake:
	default:
	}
	w.m.mu.Unlock()
	t := w.m.clock.NewTicker(period)
	defer func() { t.Stop() }()
	for {
		w.step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-w.done:
			return
		case <-t.C():
		case <-w.wake:
			w.m.mu.Lock()
			p := secs(w.probe.PeriodSeconds)
			w.m.mu.Unlock()
			if p != period {
				t.Stop()
				period = p
				t = w.m.clock.NewTicker(period)
			}
		}
	}
}

// step runs one probe if one is due and records its result.
func (w *worker) step(ctx context.Context) {
	m := w.m
	k := w.key
	m.mu.Lock()
	id, probe, container := w.id, w.probe, w.container
	now := m.clock.Now()
	skip := id == "" || w.onHold || w.stopped ||
		now.Before(w.startedAt.Add(secs(probe.InitialDelaySeconds))) ||
		!w.lastProbe.IsZero() && now.Before(w.lastProbe.Add(secs(probe.PeriodSeconds))) ||
		k.typ != Startup && !m.startedLocked(k.uid, k.container, id) ||
		k.typ == Startup && m.verdictLocked(k.uid, k.container, id, Startup) == Success
	if !skip {
		w.lastProbe = now
	}
	m.mu.Unlock()
	if skip {
		return
	}
	res, msg := m.runProbe(ctx, &probe, target{podIP: m.cfg.PodIP(k.uid), containerID: id, container: &container})
	if ctx.Err() != nil {
		return
	}
	if u, ok := w.record(id, res, msg); ok {
		if res == Failure {
			m.log.Info("probe failed", "pod", k.uid, "container", k.container, "probe", k.typ.String(), "msg", msg)
		}
		m.cfg.OnUpdate(u)
	}
}

// record folds a raw result on instance id into the verdict with the
// thresholds; it returns the update when the verdict changed.
func (w *worker) record(id string, res Result, msg string) (Update, bool) {
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.id != id || w.stopped {
		return Update{}, false // the container changed meanwhile
	}
	if res == w.lastRaw {
		w.streak++
	} else {
		w.lastRaw, w.streak = res, 1
	}
	need := int(w.probe.FailureThreshold)
	if res == Success {
		need = int(w.probe.SuccessThreshold)
	}
	if w.streak < need {
		return Update{}, false
	}
	cur := m.verdicts[w.key]
	if cur.id == id && cur.result == res {
		return Update{}, false
	}
	m.verdicts[w.key] = verdict{id: id, result: res}
	if res == Failure && w.key.typ != Readiness {
		w.onHold = true // the kubelet restarts it; a new instance starts over
	}
	return Update{PodUID: w.key.uid, Container: w.key.container, ContainerID: id, Type: w.key.typ, Result: res, Message: msg}, true
}
