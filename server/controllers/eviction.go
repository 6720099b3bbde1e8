package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/scheduler"
	"github.com/skiffhq/skiff/storage"
)

// disruption is the cluster's state for eviction purposes, as the
// Kubernetes node lifecycle controller's zone states (skiff has one zone).
type disruption uint8

const (
	disruptionNormal  disruption = iota
	disruptionPartial            // at least UnhealthyThreshold of the nodes unhealthy
	disruptionFull               // every node unhealthy
)

func (d disruption) String() string {
	switch d {
	case disruptionNormal:
		return "Normal"
	case disruptionPartial:
		return "PartialDisruption"
	case disruptionFull:
		return "FullDisruption"
	}
	return fmt.Sprintf("disruption(%d)", uint8(d))
}

// evictionRate returns the disruption state of a cluster of total nodes of
// which unhealthy are not ready or unreachable, and the node eviction rate
// it allows. When most nodes go dark at once the likelier cause is the
// network between them and the server, not the nodes: evicting would
// reshuffle the whole fleet for nothing, so evictions slow down (large
// clusters) or stop.
func evictionRate(total, unhealthy int, cfg Config) (disruption, float64) {
	switch {
	case total == 0 || unhealthy == 0:
		return disruptionNormal, cfg.EvictionRate
	case unhealthy == total:
		return disruptionFull, 0
	case float64(unhealthy)/float64(total) >= cfg.UnhealthyThreshold:
		if total > cfg.LargeClusterSize {
			return disruptionPartial, cfg.SecondaryEvictionRate
		}
		return disruptionPartial, 0
	}
	return disruptionNormal, cfg.EvictionRate
}

// tokenBucket is a rate limiter driven by the times it is given (so a
// fake clock drives it in tests). Not safe for concurrent use.
type tokenBucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

// refill adds the tokens earned since the last call.
func (b *tokenBucket) refill(now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
	}
	b.last = now
}

// setRate changes the rate from now on.
func (b *tokenBucket) setRate(r float64, now time.Time) {
	b.refill(now)
	b.rate = r
}

// take spends one token if there is one; at rate zero there never is
// (tokens saved while the rate was higher do not count).
func (b *tokenBucket) take(now time.Time) bool {
	b.refill(now)
	if b.rate > 0 && b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// evictionDue reports whether pod p on a node tainted unreachable since
// taintedAt is due for eviction at now: a pod that tolerates the
// NoExecute taint for ever stays; one tolerating it for some seconds goes
// after them; any other pod goes after timeout. at is when it is due
// (zero when never).
func evictionDue(p *api.Pod, taintedAt time.Time, timeout time.Duration, now time.Time) (due bool, at time.Time) {
	taint := &api.Taint{Key: TaintUnreachable, Effect: api.TaintEffectNoExecute}
	d, tolerated := timeout, false
	for i := range p.Spec.Tolerations {
		tl := p.Spec.Tolerations[i]
		if !scheduler.Tolerates([]api.Toleration{tl}, taint) {
			continue
		}
		if tl.TolerationSeconds == nil {
			return false, time.Time{}
		}
		s := time.Duration(max(*tl.TolerationSeconds, 0)) * time.Second
		if !tolerated || s < d {
			d = s
		}
		tolerated = true
	}
	at = taintedAt.Add(d)
	return !now.Before(at), at
}

// Evict runs one eviction pass: it works out the disruption state, and
// for each unreachable node (longest unreachable first) with pods due,
// takes a token and evicts them: pods that belong to a controller are
// deleted gracefully (their agent stops them if the node comes back, and
// the controller makes replacements elsewhere meanwhile); bare pods are
// marked Failed with reason NodeLost. A node whose pods could not be
// evicted for want of a token is tried again on the next pass.
func (c *NodeLifecycle) Evict(ctx context.Context) error {
	now := c.cfg.Clock.Now()
	nodes := c.in.Nodes.List()
	type victim struct {
		node *api.Node
		at   time.Time
	}
	var victims []victim
	unhealthy := 0
	for _, o := range nodes {
		n := o.(*api.Node)
		h := nodeHealthOf(n, c.lastHeartbeat(n, now), now, c.cfg.NodeMonitorGrace)
		if h != healthReady {
			unhealthy++
		}
		t := taintOf(n, TaintUnreachable, api.TaintEffectNoExecute)
		if h != healthUnreachable || t == nil || t.TimeAdded == nil {
			continue
		}
		victims = append(victims, victim{n, t.TimeAdded.Time})
	}
	state, rate := evictionRate(len(nodes), unhealthy, c.cfg)
	c.mu.Lock()
	if state != c.state {
		c.cfg.Logger.Warn("node disruption state changed", "from", c.state.String(), "to", state.String(), "nodes", len(nodes), "unhealthy", unhealthy)
		c.state = state
	}
	c.limiter.setRate(rate, now)
	c.mu.Unlock()
	slices.SortFunc(victims, func(a, b victim) int { return a.at.Compare(b.at) })

	var errs []error
	for _, v := range victims {
		var due []*api.Pod
		for _, o := range c.in.Pods.ByIndex(indexByNode, v.node.Name) {
			p := o.(*api.Pod)
			if !active(p) {
				continue
			}
			if ok, _ := evictionDue(p, v.at, c.cfg.PodEvictionTimeout, now); ok {
				due = append(due, p)
			}
		}
		if len(due) == 0 {
			continue
		}
		c.mu.Lock()
		ok := c.limiter.take(now)
		c.mu.Unlock()
		if !ok {
			break // rate-limited: the longest unreachable go first next time
		}
		c.cfg.Logger.Info("evicting pods of unreachable node", "node", v.node.Name, "pods", len(due), "state", state.String())
		for _, p := range due {
			if err := c.evictPod(ctx, p, v.node.Name, now); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// evictPod deletes a controller's pod gracefully, or marks a bare pod
// Failed (NodeLost): nothing would replace a deleted bare pod, so it is
// kept for its owner to see what happened.
func (c *NodeLifecycle) evictPod(ctx context.Context, p *api.Pod, node string, now time.Time) error {
	if controllerRef(&p.ObjectMeta) != nil {
		if err := c.pods.delete(ctx, p, now); err != nil {
			return fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		eventf(ctx, c.rec, p, api.EventTypeNormal, ReasonTaintManagerEvicted, "Marking for deletion Pod %s/%s: node %s is unreachable", p.Namespace, p.Name, node)
		return nil
	}
	cp := *p
	cp.Status.Phase = api.PodFailed
	cp.Status.Reason = ReasonNodeLost
	cp.Status.Message = fmt.Sprintf("Node %s which was running pod %s is unresponsive", node, p.Name)
	if err := c.pods.update(ctx, &cp); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("mark pod %s/%s failed: %w", p.Namespace, p.Name, err)
	}
	eventf(ctx, c.rec, &cp, api.EventTypeWarning, ReasonNodeLost, "%s", cp.Status.Message)
	return nil
}
