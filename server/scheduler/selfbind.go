package scheduler

import (
	"context"
	"strconv"
	"sync"

	"github.com/skiffhq/skiff/api"
)

// Self-bound pods.
//
// Every bind comes back through the pod watch. Decoding that event (the
// whole pod's JSON) is wasted work: the binder wrote that very object.
// The binder therefore announces each bind before writing it (pod key and
// the resourceVersion it was decided on), and records the outcome after
// (the new revision, or failure). The pod informer checks each Modified
// event's key, which the store gives without decoding: for a key with a
// bind announced and a revision above the announced one, the event is
// the bind's own write if the bind succeeded at exactly that revision —
// the write's resourceVersion precondition means no other write to the
// pod can come between. The informer then hands the loop the object the
// binder wrote instead of decoding the event; any other event (a foreign
// change, a bind that failed) is decoded as before.
//
// The store publishes a commit to watchers before UpdateBatch returns, so
// the informer may see the event first: it then waits for that batch's
// outcome, which is at most the rest of the batch's commit away.

// selfBatch is one UpdateBatch call's binds; done closes once every
// outcome is recorded.
type selfBatch struct {
	done chan struct{}
}

// selfBind is one announced bind.
type selfBind struct {
	batch *selfBatch
	prev  int64    // the resourceVersion the decision was made on
	pi    *PodInfo // the pod as decided on
	// Outcome, valid once batch.done is closed.
	ok  bool
	rev int64    // the bind's revision
	pod *api.Pod // the object written
}

// selfBinds is the registry the binders and the pod informer share.
type selfBinds struct {
	mu    sync.Mutex
	binds map[string]*selfBind
}

func newSelfBinds() *selfBinds { return &selfBinds{binds: make(map[string]*selfBind)} }

// announce registers reqs as one batch about to be written. objs are the
// objects that will be written (UpdateBatch sets their resourceVersion).
func (r *selfBinds) announce(reqs []bindRequest, objs []api.Object) (*selfBatch, []*selfBind) {
	b := &selfBatch{done: make(chan struct{})}
	out := make([]*selfBind, len(reqs))
	r.mu.Lock()
	for i, q := range reqs {
		prev, err := strconv.ParseInt(q.pod.ResourceVersion, 10, 64)
		sb := &selfBind{batch: b, prev: prev, pi: q.qp.PodInfo, pod: objs[i].(*api.Pod)}
		out[i] = sb
		if err == nil {
			r.binds[q.qp.Key] = sb
		} // else not registered: its event is decoded
	}
	r.mu.Unlock()
	return b, out
}

// settle records the batch's outcomes (errs from UpdateBatch) and
// forgets the binds that failed: their events, if any, are foreign.
func (r *selfBinds) settle(b *selfBatch, binds []*selfBind, errs []error) {
	r.mu.Lock()
	for i, sb := range binds {
		if errs[i] == nil {
			rev, err := strconv.ParseInt(sb.pod.ResourceVersion, 10, 64)
			sb.ok, sb.rev = err == nil, rev
		}
		if !sb.ok {
			key := sb.pi.Key
			if r.binds[key] == sb {
				delete(r.binds, key)
			}
		}
	}
	r.mu.Unlock()
	close(b.done)
}

// match reports whether the Modified event of key at rev is a bind this
// scheduler wrote, and if so returns the PodInfo of the written pod. It
// may wait for the bind's batch to finish; it returns false if ctx ends.
func (r *selfBinds) match(ctx context.Context, key string, rev int64) (*PodInfo, bool) {
	r.mu.Lock()
	sb := r.binds[key]
	r.mu.Unlock()
	if sb == nil || rev <= sb.prev {
		return nil, false
	}
	select {
	case <-sb.batch.done:
	case <-ctx.Done():
		return nil, false
	}
	// The first change after prev is the bind's if it succeeded; either
	// way the entry has served.
	r.mu.Lock()
	if r.binds[key] == sb {
		delete(r.binds, key)
	}
	r.mu.Unlock()
	if !sb.ok || sb.rev != rev {
		return nil, false
	}
	pi := *sb.pi
	pi.Pod = sb.pod
	return &pi, true
}

// forgetListed drops the binds a fresh list has overtaken: a listed pod
// newer than the state its bind was decided on is either the bind itself
// (whose event the new watch will not deliver) or a change that makes
// the bind fail.
func (r *selfBinds) forgetListed(pods []*PodInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.binds) == 0 {
		return
	}
	for _, pi := range pods {
		sb := r.binds[pi.Key]
		if sb == nil {
			continue
		}
		if rv, err := strconv.ParseInt(pi.Pod.ResourceVersion, 10, 64); err != nil || rv > sb.prev {
			delete(r.binds, pi.Key)
		}
	}
}
