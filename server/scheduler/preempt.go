package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// Victims is what preemption decided: evict Pods from Node so the
// preemptor fits.
type Victims struct {
	Node string
	Pods []*PodInfo
}

// victimRank orders candidate nodes: the lowest highest-priority victim,
// then the fewest victims, then the lowest priority sum, then the name.
type victimRank struct {
	maxPrio int32
	count   int
	sum     int64
}

func rankOf(vs []*PodInfo) victimRank {
	r := victimRank{maxPrio: vs[0].Priority, count: len(vs)}
	for _, v := range vs {
		r.maxPrio = max(r.maxPrio, v.Priority)
		r.sum += int64(v.Priority)
	}
	return r
}

func (r victimRank) less(o victimRank) bool {
	if r.maxPrio != o.maxPrio {
		return r.maxPrio < o.maxPrio
	}
	if r.count != o.count {
		return r.count < o.count
	}
	return r.sum < o.sum
}

// Preempt looks among cands (nodes rejected only for resources, pod count
// or ports) for the node where evicting the fewest, lowest-priority pods,
// all of lower priority than pi and not already terminating, lets pi fit.
// On each node it first removes every lower-priority pod, then gives back
// (highest priority first) each one pi still fits beside; the rest are
// the victims. ok is false when no node works.
func (a *Algorithm) Preempt(cands []*NodeInfo, pi *PodInfo) (v Victims, ok bool) {
	var best victimRank
	for _, ni := range cands {
		var lower []*PodInfo
		for _, p := range ni.Pods {
			if p.Priority < pi.Priority && p.Pod.DeletionTimestamp == nil {
				lower = append(lower, p)
			}
		}
		if len(lower) == 0 {
			continue
		}
		slices.SortFunc(lower, func(x, y *PodInfo) int {
			if x.Priority != y.Priority {
				return int(y.Priority) - int(x.Priority)
			}
			return strings.Compare(x.Key, y.Key)
		})
		tmp := ni.without(lower)
		if len(feasible(pi, tmp, nil)) > 0 {
			continue
		}
		var victims []*PodInfo
		for _, p := range lower {
			tmp.with(p)
			if len(feasible(pi, tmp, nil)) > 0 {
				tmp = tmp.without([]*PodInfo{p})
				victims = append(victims, p)
			}
		}
		if len(victims) == 0 {
			continue // cannot happen: pi did not fit with all of them
		}
		r := rankOf(victims)
		if !ok || r.less(best) || (r == best && ni.Name < v.Node) {
			best, v, ok = r, Victims{Node: ni.Name, Pods: victims}, true
		}
	}
	return v, ok
}

// preempt runs preemption for a pod that fits nowhere: unless victims it
// chose earlier are still terminating, it picks victims, and off the loop
// marks them for graceful deletion (as the API server does for bound
// pods), records Preempted events and sets the preemptor's
// status.nominatedNodeName. The preemptor waits in the queue; the
// victims' deletion moves it back.
func (s *Scheduler) preempt(pi *PodInfo, cands []*NodeInfo, fe *FitError) {
	if node := s.nominated[pi.Key]; node != "" {
		if ni := s.cache.Node(node); ni != nil && hasTerminatingLower(ni, pi.Priority) {
			return // the room it made is still being freed
		}
	}
	v, ok := s.algo.Preempt(cands, pi)
	if !ok {
		if fe.NumNodes == 0 {
			return
		}
		fe.Preemption = fmt.Sprintf("0/%d nodes are available: %d No preemption victims found for incoming pod, %d Preemption is not helpful for scheduling.",
			fe.NumNodes, len(cands), fe.NumNodes-len(cands))
		return
	}
	s.metrics.Preemptions.Add(1)
	s.metrics.Victims.Add(int64(len(v.Pods)))
	s.nominated[pi.Key] = v.Node
	now := s.clk.Now()
	preemptor := pi.Pod
	victims := make([]*api.Pod, len(v.Pods))
	for i, p := range v.Pods {
		victims[i] = p.Pod
	}
	s.fx.do(func(ctx context.Context) {
		for _, vp := range victims {
			_, err := s.store.GuaranteedUpdate(ctx, "pods", vp.Namespace, vp.Name, func(cur api.Object) (api.Object, error) {
				p := *cur.(*api.Pod)
				if p.UID != vp.UID || p.DeletionTimestamp != nil {
					return cur, nil
				}
				g := int64(30)
				if p.Spec.TerminationGracePeriodSeconds != nil {
					g = *p.Spec.TerminationGracePeriodSeconds
				}
				p.DeletionTimestamp = api.NewTimePtr(now)
				p.DeletionGracePeriodSeconds = &g
				return &p, nil
			})
			if err != nil {
				if ctx.Err() == nil && !isGone(err) {
					s.log.Warn("scheduler could not evict preemption victim", "pod", vp.Namespace+"/"+vp.Name, "err", err)
				}
				continue
			}
			if s.cfg.Recorder != nil {
				c := *vp
				s.cfg.Recorder.Eventf(ctx, &c, api.EventTypeNormal, "Preempted", "Preempted by pod %s on node %s", preemptor.UID, v.Node)
			}
		}
		_, err := s.store.GuaranteedUpdate(ctx, "pods", preemptor.Namespace, preemptor.Name, func(cur api.Object) (api.Object, error) {
			p := *cur.(*api.Pod)
			if p.UID != preemptor.UID || p.Spec.NodeName != "" {
				return cur, nil
			}
			p.Status.NominatedNodeName = v.Node
			return &p, nil
		})
		if err != nil && ctx.Err() == nil && !isGone(err) {
			s.log.Warn("scheduler could not nominate node", "pod", preemptor.Namespace+"/"+preemptor.Name, "err", err)
		}
	})
}

func hasTerminatingLower(ni *NodeInfo, prio int32) bool {
	for _, p := range ni.Pods {
		if p.Pod.DeletionTimestamp != nil && p.Priority < prio {
			return true
		}
	}
	return false
}
