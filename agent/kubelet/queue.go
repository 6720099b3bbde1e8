package kubelet

import (
	"sort"
	"sync"
	"time"
)

// workQueue holds each pod's next sync time. Adding a pod that is already
// queued keeps the earlier time. Safe for concurrent use.
type workQueue struct {
	mu  sync.Mutex
	due map[string]time.Time
}

func newWorkQueue() *workQueue { return &workQueue{due: map[string]time.Time{}} }

// enqueue asks for pod uid to be synced at when (or earlier if already
// queued earlier).
func (q *workQueue) enqueue(uid string, when time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if old, ok := q.due[uid]; ok && old.Before(when) {
		return
	}
	q.due[uid] = when
}

// popDue removes and returns the pods due at now, in UID order.
func (q *workQueue) popDue(now time.Time) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for uid, t := range q.due {
		if !t.After(now) {
			out = append(out, uid)
			delete(q.due, uid)
		}
	}
	sort.Strings(out)
	return out
}

// forget drops uid from the queue.
func (q *workQueue) forget(uid string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.due, uid)
}
