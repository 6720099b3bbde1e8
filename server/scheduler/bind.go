package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// bindRequest is a decided binding on its way to the store.
type bindRequest struct {
	qp   *QueuedPod
	pod  *api.Pod // the state the decision was made on (its resourceVersion is the precondition)
	node string
}

// binder writes bindings: it takes every request ready when it wakes and
// writes them with one UpdateBatch (normally one transaction, one fsync),
// each with its pod's resourceVersion as precondition, then reports every
// result to the loop. Several binders pipeline: one commits while the next
// collects.
func (s *Scheduler) binder(ctx context.Context) {
	var reqs []bindRequest
	var objs []api.Object
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.binds.notify:
		}
		reqs = s.binds.take(reqs)
		if len(reqs) == 0 {
			continue
		}
		for lo := 0; lo < len(reqs); lo += bindBatchMax {
			objs = s.bind(ctx, reqs[lo:min(lo+bindBatchMax, len(reqs))], objs[:0])
		}
		clear(reqs)
		reqs = reqs[:0]
		// Another request may have arrived while this batch committed
		// and its notification been taken by this binder's select: look
		// again rather than wait.
		s.binds.mu.Lock()
		more := len(s.binds.items) > 0
		s.binds.mu.Unlock()
		if more {
			select {
			case s.binds.notify <- struct{}{}:
			default:
			}
		}
	}
}

// bindBatchMax is the most binds written by one UpdateBatch: one
// transaction at the store's default MaxBatchTxn, so the pod informer,
// which may wait for a batch's outcome (selfBinds.match), waits for one
// commit.
const bindBatchMax = storage.DefaultMaxBatchTxn

// bind writes reqs with one UpdateBatch and reports the results to the
// loop. objs is scratch space, returned for reuse.
func (s *Scheduler) bind(ctx context.Context, reqs []bindRequest, objs []api.Object) []api.Object {
	now := s.clk.Now()
	for _, r := range reqs {
		objs = append(objs, boundPod(r.pod, r.node, now))
	}
	batch, announced := s.self.announce(reqs, objs)
	errs := s.store.UpdateBatch(ctx, objs)
	s.self.settle(batch, announced, errs)
	s.metrics.BindBatches.Add(1)
	at := s.clk.Now()
	msgs := make([]message, len(reqs))
	for i, r := range reqs {
		msgs[i] = message{kind: msgBound, qp: r.qp, dest: r.node, at: at, err: errs[i]}
	}
	s.in.put(msgs...)
	clear(objs)
	return objs[:0]
}

// boundPod returns a copy of p bound to node with PodScheduled=True. p is
// shared with the watch and not modified; the copy shares what it does
// not change.
func boundPod(p *api.Pod, node string, now time.Time) *api.Pod {
	c := *p
	c.Spec.NodeName = node
	c.Status.Conditions = withCondition(p.Status.Conditions, api.PodCondition{
		Type: api.PodScheduled, Status: api.ConditionTrue,
	}, now)
	return &c
}

// withCondition returns a copy of cs with cond set (replacing the one of
// its type), keeping the transition time when the status is unchanged.
func withCondition(cs []api.PodCondition, cond api.PodCondition, now time.Time) []api.PodCondition {
	out := make([]api.PodCondition, 0, len(cs)+1)
	cond.LastTransitionTime = api.NewTime(now)
	cond.LastProbeTime = api.Time{}
	found := false
	for _, c := range cs {
		if c.Type == cond.Type {
			if c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			out = append(out, cond)
			found = true
			continue
		}
		out = append(out, c)
	}
	if !found {
		out = append(out, cond)
	}
	return out
}

func podCondition(p *api.Pod, typ string) *api.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// reportUnschedulable writes PodScheduled=False (reason Unschedulable,
// the FitError message) when the pod does not say so already, and
// records a FailedScheduling event. Both happen off the loop.
func (s *Scheduler) reportUnschedulable(pi *PodInfo, fe *FitError, now time.Time) {
	msg := fe.Error()
	s.fx.event(pi.Pod, api.EventTypeWarning, "FailedScheduling", msg)
	if c := podCondition(pi.Pod, api.PodScheduled); c != nil && c.Status == api.ConditionFalse && c.Reason == "Unschedulable" && c.Message == msg {
		return
	}
	ns, name, uid := pi.Pod.Namespace, pi.Pod.Name, pi.UID
	s.fx.do(func(ctx context.Context) {
		_, err := s.store.GuaranteedUpdate(ctx, "pods", ns, name, func(cur api.Object) (api.Object, error) {
			p := *cur.(*api.Pod)
			if p.UID != uid || p.Spec.NodeName != "" {
				return cur, nil // replaced or bound meanwhile
			}
			p.Status.Conditions = withCondition(p.Status.Conditions, api.PodCondition{
				Type: api.PodScheduled, Status: api.ConditionFalse, Reason: "Unschedulable", Message: msg,
			}, now)
			return &p, nil
		})
		if err != nil && ctx.Err() == nil && !isGone(err) {
			s.log.Warn("scheduler could not update pod status", "pod", ns+"/"+name, "err", err)
		}
	})
}

func isGone(err error) bool { return errors.Is(err, storage.ErrNotFound) }
