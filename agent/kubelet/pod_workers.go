package kubelet

import (
	"context"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// PodState is where a pod is in the agent's lifecycle. It is derived from
// recorded facts (when the pod was asked to terminate, when it finished
// terminating), never stored as such.
type PodState int

// Pod states. A pod only moves forward: Syncing → Terminating →
// Terminated. A terminated pod never runs again under the same UID.
const (
	// PodSyncing: the pod should run; syncPod drives it.
	PodSyncing PodState = iota
	// PodTerminating: the pod was killed (deleted, removed, evicted) or
	// finished; its containers are being stopped.
	PodTerminating
	// PodTerminated: every container has stopped.
	PodTerminated
)

func (s PodState) String() string {
	switch s {
	case PodSyncing:
		return "Syncing"
	case PodTerminating:
		return "Terminating"
	case PodTerminated:
		return "Terminated"
	}
	return "PodState(?)"
}

// workType is what an update asks of a pod worker.
type workType int

const (
	workSync workType = iota // run the pod (create, update, resync)
	workKill                 // stop the pod
)

// syncResult is what a sync of a running pod found.
type syncResult struct {
	// terminal: the pod finished (Succeeded or Failed); it terminates.
	terminal bool
	// requeueAfter > 0 asks for the next sync that soon (back-off ends).
	requeueAfter time.Duration
}

// podFuncs are the effects a worker performs; the Kubelet provides them,
// tests stub them.
type podFuncs struct {
	// sync runs a pod that should run; ctx is cancelled when a kill
	// arrives.
	sync func(ctx context.Context, pod *api.Pod) (syncResult, error)
	// kill stops every container of pod (grace overrides the pod's
	// own), removing them unless keep (a finished pod keeps its exited
	// containers for their logs until it is deleted).
	kill func(ctx context.Context, pod *api.Pod, grace *int64, keep bool) error
	// terminated is called once when the pod has fully stopped.
	terminated func(pod *api.Pod)
	// cleanup removes what is left of a terminated pod (containers,
	// sandbox) when it is deleted or its source removed it. Idempotent.
	cleanup func(ctx context.Context, pod *api.Pod) error
	// done is called after each unit of work: err is its error, requeue
	// the asked delay (a zero delay asks for the default resync).
	done func(uid string, err error, requeue time.Duration)
}

// podRecord is what the workers know of one pod. Fields are guarded by
// podWorkers.mu.
type podRecord struct {
	pod *api.Pod
	// orphan: the runtime holds the pod but no source wants it; there is
	// no status to report.
	orphan bool

	terminatingAt time.Time // a kill arrived or the pod finished
	finishedPhase bool      // terminating because the pod finished, not killed
	terminatedAt  time.Time // every container stopped
	removedAt     time.Time // the source removed the pod
	cleanedAt     time.Time // containers and sandbox of a terminated pod removed
	finishedAt    time.Time // cleanup done; the worker exited
	grace         *int64    // smallest grace asked by a kill

	pending bool // work waits
	working bool
	cancel  context.CancelFunc // cancels the running sync or kill
	wake    chan struct{}
}

// needsCleanup: a terminated pod that was removed, or deleted and not
// cleaned up yet.
func (r *podRecord) needsCleanup() bool {
	return !r.removedAt.IsZero() || (r.pod.DeletionTimestamp != nil && r.cleanedAt.IsZero())
}

func (r *podRecord) state() PodState {
	switch {
	case !r.terminatedAt.IsZero():
		return PodTerminated
	case !r.terminatingAt.IsZero():
		return PodTerminating
	}
	return PodSyncing
}

// podWorkers runs one goroutine per pod. Updates to a pod are serialised
// through its worker: at most one unit of work runs at a time, pending
// syncs coalesce to the latest pod, and a pending kill always wins over a
// pending sync. UpdatePod never blocks on the work itself.
type podWorkers struct {
	funcs podFuncs
	clock clock.Clock
	ctx   context.Context // lifetime of every worker goroutine
	wg    sync.WaitGroup

	mu      sync.Mutex
	records map[string]*podRecord
	running int // worker goroutines alive
}

func newPodWorkers(ctx context.Context, c clock.Clock, f podFuncs) *podWorkers {
	return &podWorkers{funcs: f, clock: c, ctx: ctx, records: map[string]*podRecord{}}
}

// updatePod hands work for pod to its worker, starting one if needed.
// For workKill, grace (may be nil) caps the grace period and removed says
// the source no longer has the pod. A pod with a deletionTimestamp is
// killed whatever the type. Syncs of a terminating or terminated pod only
// refresh the pod object.
func (w *podWorkers) updatePod(pod *api.Pod, t workType, grace *int64, removed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.updateLocked(pod, t, grace, removed, false)
}

func (w *podWorkers) updateLocked(pod *api.Pod, t workType, grace *int64, removed, orphan bool) {
	uid := pod.UID
	r := w.records[uid]
	if r != nil && !r.finishedAt.IsZero() {
		return // finished: the UID never runs again
	}
	if r == nil {
		if t == workKill && removed && !orphan {
			// never started: there is nothing to stop, but the runtime
			// may hold leftovers (housekeeping finds them as orphans)
			return
		}
		r = &podRecord{pod: pod, orphan: orphan, wake: make(chan struct{}, 1)}
		w.records[uid] = r
		w.wg.Add(1)
		w.running++
		go w.run(uid, r)
	}
	now := w.clock.Now()
	if !r.orphan {
		r.pod = pod
	}
	if pod.DeletionTimestamp != nil {
		t = workKill
	}
	if removed && r.removedAt.IsZero() {
		r.removedAt = now
	}
	switch {
	case r.state() == PodTerminated:
		r.pending = r.pending || r.needsCleanup()
	case t == workKill:
		shorter := grace != nil && (r.grace == nil || *grace < *r.grace)
		if shorter {
			g := *grace
			r.grace = &g
		}
		if r.terminatingAt.IsZero() {
			r.terminatingAt = now
			if r.cancel != nil {
				r.cancel() // a kill preempts a running sync
			}
		} else if shorter && r.cancel != nil {
			r.cancel() // a shorter grace preempts a running kill: it starts over with it
		}
		r.pending = true
	default: // syncing: run it; terminating: (re)try the kill
		r.pending = true
	}
	if r.pending {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// killOrphan kills and cleans up a pod only the runtime knows.
func (w *podWorkers) killOrphan(pod *api.Pod, grace int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.updateLocked(pod, workKill, &grace, true, true)
}

// run is pod uid's worker goroutine.
func (w *podWorkers) run(uid string, r *podRecord) {
	defer w.wg.Done()
	defer func() {
		w.mu.Lock()
		w.running--
		w.mu.Unlock()
	}()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-r.wake:
		}
		for w.step(uid, r) {
		}
		w.mu.Lock()
		finished := !r.finishedAt.IsZero()
		w.mu.Unlock()
		if finished {
			return
		}
	}
}

// step runs one unit of pending work; it reports whether more may wait.
func (w *podWorkers) step(uid string, r *podRecord) bool {
	w.mu.Lock()
	if !r.pending || w.ctx.Err() != nil {
		r.working = false
		w.mu.Unlock()
		return false
	}
	r.pending = false
	r.working = true
	pod, state, grace := r.pod, r.state(), r.grace
	keep := r.finishedPhase && r.removedAt.IsZero() && r.pod.DeletionTimestamp == nil
	removed := !r.removedAt.IsZero()
	ctx, cancel := context.WithCancel(w.ctx)
	if state != PodTerminated {
		r.cancel = cancel
	}
	w.mu.Unlock()
	defer cancel()

	switch state {
	case PodSyncing:
		res, err := w.funcs.sync(ctx, pod)
		w.mu.Lock()
		r.cancel = nil
		if res.terminal && r.terminatingAt.IsZero() {
			r.terminatingAt = w.clock.Now()
			r.finishedPhase = true
			r.pending = true
		}
		again := r.pending
		w.mu.Unlock()
		if !res.terminal && !again {
			w.funcs.done(uid, err, res.requeueAfter)
		}
	case PodTerminating:
		err := w.funcs.kill(ctx, pod, grace, keep)
		w.mu.Lock()
		r.cancel = nil
		w.mu.Unlock()
		if err == nil {
			w.mu.Lock()
			r.terminatedAt = w.clock.Now()
			orphan := r.orphan
			r.pending = r.pending || r.needsCleanup()
			w.mu.Unlock()
			if !orphan {
				w.funcs.terminated(pod)
			}
		}
		if err != nil {
			w.funcs.done(uid, err, 0)
		}
	case PodTerminated:
		// A deleted pod loses what is left of it (a finished pod's
		// exited containers); the worker ends once the source removed it.
		w.mu.Lock()
		need := r.needsCleanup()
		w.mu.Unlock()
		if !need {
			break
		}
		err := w.funcs.cleanup(ctx, pod)
		w.mu.Lock()
		if err == nil {
			r.cleanedAt = w.clock.Now()
			if removed {
				r.finishedAt = r.cleanedAt
			}
		}
		w.mu.Unlock()
		if err != nil {
			w.funcs.done(uid, err, 0)
		}
	}
	return true
}

// state returns pod uid's state and whether the workers know it.
func (w *podWorkers) state(uid string) (PodState, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.records[uid]
	if r == nil {
		return PodSyncing, false
	}
	return r.state(), true
}

// known reports whether uid has a record that is not finished.
func (w *podWorkers) active(uid string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.records[uid]
	return r != nil && r.finishedAt.IsZero()
}

// forgetFinished drops the records of finished pods keep says are not
// wanted any more, so their UIDs stop being remembered.
func (w *podWorkers) forgetFinished(wanted func(uid string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid, r := range w.records {
		if !r.finishedAt.IsZero() && !wanted(uid) {
			delete(w.records, uid)
		}
	}
}

// removeUnwanted treats every unfinished worker of a pod no source wants
// (and whose removal was never recorded) as removed: it is stopped, cleaned
// up and finishes. It is the safety net of the kubelet's SyncKnownPods:
// however a worker came to be, it cannot outlive its pod. It returns the
// UIDs it removed; the sync loop's own REMOVE handling should leave none.
func (w *podWorkers) removeUnwanted(wanted func(uid string) bool) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for uid, r := range w.records {
		if r.finishedAt.IsZero() && r.removedAt.IsZero() && !wanted(uid) {
			out = append(out, uid)
			w.updateLocked(r.pod, workKill, nil, true, r.orphan)
		}
	}
	return out
}

// idle reports whether no worker has work running or waiting (tests).
func (w *podWorkers) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.records {
		if r.pending || r.working {
			return false
		}
	}
	return true
}

// wait waits for every worker goroutine to exit (after ctx ends).
func (w *podWorkers) wait() { w.wg.Wait() }

// activeUIDs lists the pods whose worker has not finished.
func (w *podWorkers) activeUIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for uid, r := range w.records {
		if r.finishedAt.IsZero() {
			out = append(out, uid)
		}
	}
	return out
}
