package apiserver

import (
	"reflect"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
)

// defaultHeartbeatSnapshot is how stale a node's stored heartbeat may get
// before a heartbeat-only status write is persisted anyway.
const defaultHeartbeatSnapshot = 5 * time.Minute

// Liveness remembers, in memory, when each node last wrote its status.
// Every status write of a node (PUT or PATCH on nodes/{name}/status) is a
// heartbeat, whether or not it reached the database: a write that changes
// nothing but the conditions' lastHeartbeatTime is persisted only when the
// stored copy is older than the snapshot interval, so 10 000 nodes beating
// every 10 s cost a handful of database writes per second instead of a
// thousand fsyncs. Readers that need exact liveness (the node lifecycle
// controller, the dashboard) ask Liveness; the stored lastHeartbeatTime is
// at most one snapshot interval behind.
//
// After a server restart Liveness is empty: its users must treat a node
// they have not heard from since start as alive until a grace period has
// passed from the start, as the kube-controller-manager does.
type Liveness struct {
	mu   sync.RWMutex
	seen map[string]time.Time
}

// NewLiveness returns an empty Liveness.
func NewLiveness() *Liveness { return &Liveness{seen: make(map[string]time.Time)} }

// Beat records a heartbeat of node at t; an older t than the one recorded
// is ignored.
func (l *Liveness) Beat(node string, t time.Time) {
	l.mu.Lock()
	if t.After(l.seen[node]) {
		l.seen[node] = t
	}
	l.mu.Unlock()
}

// Last returns the time of node's latest heartbeat since start.
func (l *Liveness) Last(node string) (time.Time, bool) {
	l.mu.RLock()
	t, ok := l.seen[node]
	l.mu.RUnlock()
	return t, ok
}

// Forget drops node (when the Node is deleted).
func (l *Liveness) Forget(node string) {
	l.mu.Lock()
	delete(l.seen, node)
	l.mu.Unlock()
}

// Snapshot returns a copy of every node's latest heartbeat.
func (l *Liveness) Snapshot() map[string]time.Time {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make(map[string]time.Time, len(l.seen))
	for k, v := range l.seen {
		out[k] = v
	}
	return out
}

// heartbeatOnly reports whether next's status differs from cur's only in
// the conditions' lastHeartbeatTime (a status write keeps cur's spec and
// metadata), and whether cur's stored heartbeat is
// still fresh (younger than snapshot at now), so the write may be skipped.
func heartbeatOnly(next, cur *api.Node, now time.Time, snapshot time.Duration) bool {
	if len(next.Status.Conditions) != len(cur.Status.Conditions) {
		return false
	}
	var stored time.Time
	for _, c := range cur.Status.Conditions {
		if c.LastHeartbeatTime.After(stored) {
			stored = c.LastHeartbeatTime.Time
		}
	}
	if stored.IsZero() || now.Sub(stored) >= snapshot {
		return false
	}
	a, b := next.Status, cur.Status
	a.Conditions = withoutHeartbeats(a.Conditions)
	b.Conditions = withoutHeartbeats(b.Conditions)
	return reflect.DeepEqual(a, b)
}

func withoutHeartbeats(cs []api.NodeCondition) []api.NodeCondition {
	out := make([]api.NodeCondition, len(cs))
	for i, c := range cs {
		c.LastHeartbeatTime = api.Time{}
		out[i] = c
	}
	return out
}

// nodeHeartbeat is the latest lastHeartbeatTime of n's conditions, or
// zero.
func nodeHeartbeat(n *api.Node) time.Time {
	var t time.Time
	for _, c := range n.Status.Conditions {
		if c.LastHeartbeatTime.After(t) {
			t = c.LastHeartbeatTime.Time
		}
	}
	return t
}
