package scheduler

import (
	"container/heap"
	"time"
)

// Queue timings, as kube-scheduler's defaults.
const (
	InitialBackoff = time.Second
	MaxBackoff     = 10 * time.Second
	// MaxUnschedulableWait is how long a pod stays in the unschedulable
	// set without an event that could help before it is retried anyway.
	MaxUnschedulableWait = 60 * time.Second
)

// where says which part of the Queue holds a pod.
type where uint8

const (
	inActive where = iota + 1
	inBackoff
	inUnschedulable
	inFlight // popped, being scheduled or bound
)

// QueuedPod is a pod in the Queue with its scheduling history.
type QueuedPod struct {
	*PodInfo
	// Attempts counts scheduling attempts so far.
	Attempts int
	// Added is when the pod first entered the queue; e2e latency counts
	// from it.
	Added time.Time
	// Popped is when the current attempt started.
	Popped time.Time

	where      where
	seq        uint64    // arrival order, last tie-break
	since      time.Time // entered its current part
	backoffEnd time.Time
	cycle      int64 // the scheduling cycle it was popped in
	index      int   // heap index
}

// Queue orders pending pods: an active heap by priority (higher first),
// then creation time (older first); a backoff heap of pods that failed
// recently, by the end of their backoff (1 s doubling to 10 s); and an
// unschedulable set, moved back by MoveAll when something that could help
// happens, and at the latest after MaxUnschedulableWait. It is not safe
// for concurrent use: the scheduling loop owns it.
type Queue struct {
	pods      map[string]*QueuedPod
	active    podHeap
	backoff   podHeap
	unsched   map[string]*QueuedPod
	seq       uint64
	cycle     int64
	moveCycle int64 // cycle of the last MoveAll
}

// NewQueue returns an empty Queue.
func NewQueue() *Queue {
	q := &Queue{pods: make(map[string]*QueuedPod), unsched: make(map[string]*QueuedPod)}
	q.active.less = func(a, b *QueuedPod) bool {
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		if ta, tb := a.Pod.CreationTimestamp.Time, b.Pod.CreationTimestamp.Time; !ta.Equal(tb) {
			return ta.Before(tb)
		}
		return a.seq < b.seq
	}
	q.backoff.less = func(a, b *QueuedPod) bool { return a.backoffEnd.Before(b.backoffEnd) }
	return q
}

// Add queues a new pending pod, or updates a queued one with pi's newer
// state: an update of a pod waiting as unschedulable moves it back to be
// retried (the pod may fit now), unless only its status changed.
func (q *Queue) Add(pi *PodInfo, now time.Time) {
	if qp, ok := q.pods[pi.Key]; ok {
		specChanged := !sameSchedulingInput(qp.PodInfo, pi)
		qp.PodInfo = pi
		switch qp.where {
		case inActive:
			heap.Fix(&q.active, qp.index)
		case inUnschedulable:
			if specChanged {
				delete(q.unsched, pi.Key)
				q.requeue(qp, now)
			}
		}
		return
	}
	q.seq++
	qp := &QueuedPod{PodInfo: pi, Added: now, seq: q.seq}
	q.pods[pi.Key] = qp
	q.pushActive(qp, now)
}

func (q *Queue) pushActive(qp *QueuedPod, now time.Time) {
	qp.where, qp.since = inActive, now
	heap.Push(&q.active, qp)
}

// requeue puts qp in backoff when its backoff has not ended, else active.
func (q *Queue) requeue(qp *QueuedPod, now time.Time) {
	if now.Before(qp.backoffEnd) {
		qp.where, qp.since = inBackoff, now
		heap.Push(&q.backoff, qp)
		return
	}
	q.pushActive(qp, now)
}

// Delete drops a pod from wherever it is.
func (q *Queue) Delete(key string) {
	qp, ok := q.pods[key]
	if !ok {
		return
	}
	delete(q.pods, key)
	switch qp.where {
	case inActive:
		heap.Remove(&q.active, qp.index)
	case inBackoff:
		heap.Remove(&q.backoff, qp.index)
	case inUnschedulable:
		delete(q.unsched, key)
	}
}

// Has reports whether key is queued or in flight.
func (q *Queue) Has(key string) bool { _, ok := q.pods[key]; return ok }

// Pop takes the first active pod after moving pods whose backoff ended
// (Flush); nil when none is ready. The pod stays known to the Queue, in
// flight, until Done or Requeue.
func (q *Queue) Pop(now time.Time) *QueuedPod {
	q.Flush(now)
	if q.active.Len() == 0 {
		return nil
	}
	qp := heap.Pop(&q.active).(*QueuedPod)
	q.cycle++
	qp.where, qp.cycle, qp.Popped, qp.since = inFlight, q.cycle, now, now
	qp.Attempts++
	return qp
}

// Done forgets a pod that was bound.
func (q *Queue) Done(key string) {
	if qp, ok := q.pods[key]; ok && qp.where == inFlight {
		delete(q.pods, key)
	}
}

// Requeue returns an in-flight pod after a failed attempt. An
// unschedulable pod waits in the unschedulable set, unless something was
// moved since its attempt started (then it may fit already and goes to
// backoff); a pod that failed for another reason backs off. A pod deleted
// meanwhile is dropped.
func (q *Queue) Requeue(qp *QueuedPod, unschedulable bool, now time.Time) {
	cur, ok := q.pods[qp.Key]
	if !ok || cur != qp || qp.where != inFlight {
		return
	}
	qp.backoffEnd = now.Add(backoffFor(qp.Attempts))
	if unschedulable && q.moveCycle < qp.cycle {
		qp.where, qp.since = inUnschedulable, now
		q.unsched[qp.Key] = qp
		return
	}
	qp.where, qp.since = inBackoff, now
	heap.Push(&q.backoff, qp)
}

// backoffFor is 1 s doubled per earlier attempt, at most 10 s.
func backoffFor(attempts int) time.Duration {
	d := InitialBackoff
	for i := 1; i < attempts && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// MoveAll moves every unschedulable pod back (to backoff while its backoff
// lasts): called on events that could make pods fit — a node added or
// changed, a pod deleted, a node condition cleared.
func (q *Queue) MoveAll(now time.Time) {
	q.moveCycle = q.cycle
	for key, qp := range q.unsched {
		delete(q.unsched, key)
		q.requeue(qp, now)
	}
}

// Flush moves pods whose backoff ended to active, and pods unschedulable
// for longer than MaxUnschedulableWait back into the queue.
func (q *Queue) Flush(now time.Time) {
	for q.backoff.Len() > 0 && !now.Before(q.backoff.items[0].backoffEnd) {
		qp := heap.Pop(&q.backoff).(*QueuedPod)
		q.pushActive(qp, now)
	}
	for key, qp := range q.unsched {
		if now.Sub(qp.since) >= MaxUnschedulableWait {
			delete(q.unsched, key)
			q.requeue(qp, now)
		}
	}
}

// NextWake returns when Flush next has work: the earliest backoff end or
// unschedulable timeout. ok is false when nothing waits.
func (q *Queue) NextWake() (t time.Time, ok bool) {
	if q.backoff.Len() > 0 {
		t, ok = q.backoff.items[0].backoffEnd, true
	}
	for _, qp := range q.unsched {
		if d := qp.since.Add(MaxUnschedulableWait); !ok || d.Before(t) {
			t, ok = d, true
		}
	}
	return t, ok
}

// Lens returns how many pods are active, backing off and unschedulable.
func (q *Queue) Lens() (active, backoff, unschedulable int) {
	return q.active.Len(), q.backoff.Len(), len(q.unsched)
}

// sameSchedulingInput reports whether an update changed nothing the
// scheduler reads (status and resourceVersion changes do not count).
func sameSchedulingInput(a, b *PodInfo) bool {
	if a.Pod == b.Pod {
		return true
	}
	pa, pb := a.Pod, b.Pod
	return a.Priority == b.Priority && a.Requests == b.Requests &&
		len(a.HostPorts) == len(b.HostPorts) &&
		specJSONEqual(pa, pb)
}

// podHeap is a binary heap of queued pods.
type podHeap struct {
	items []*QueuedPod
	less  func(a, b *QueuedPod) bool
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index, h.items[j].index = i, j
}
func (h *podHeap) Push(x any) {
	qp := x.(*QueuedPod)
	qp.index = len(h.items)
	h.items = append(h.items, qp)
}
func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	qp := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	qp.index = -1
	return qp
}
