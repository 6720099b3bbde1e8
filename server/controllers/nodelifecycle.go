package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/scheduler"
	"github.com/skiffhq/skiff/storage"
)

// Taints the node lifecycle controller manages, as Kubernetes names them.
const (
	TaintUnreachable = scheduler.TaintUnreachable
	TaintNotReady    = scheduler.TaintNotReady
)

// Reasons the node lifecycle controller writes.
const (
	ReasonNodeStatusUnknown   = "NodeStatusUnknown"
	ReasonNodeNeverUpdated    = "NodeStatusNeverUpdated"
	ReasonNodeLost            = "NodeLost"
	ReasonNodeNotReady        = "NodeNotReady"
	ReasonTaintManagerEvicted = "TaintManagerEviction"
	// ReasonClockSkew is the Warning event on a Node whose reported
	// heartbeat times are ahead of the server's clock.
	ReasonClockSkew = "ClockSkew"
)

// maxClockSkew is how far ahead of the server's clock a node's reported
// heartbeat may be before the controller says so in an event.
const maxClockSkew = 30 * time.Second

// nodeHealth is what the controller concludes about a node. Transitions,
// all derived from recorded facts at each check:
//
//	Ready ⇄ NotReady      the agent reports Ready True / not True
//	any   → Unreachable   no heartbeat for NodeMonitorGrace
//	Unreachable → Ready/NotReady  a heartbeat arrives
type nodeHealth uint8

const (
	healthReady nodeHealth = iota
	healthNotReady
	healthUnreachable
)

func (h nodeHealth) String() string {
	switch h {
	case healthReady:
		return "Ready"
	case healthNotReady:
		return "NotReady"
	case healthUnreachable:
		return "Unreachable"
	}
	return fmt.Sprintf("nodeHealth(%d)", uint8(h))
}

// nodeHealthOf decides n's health at now from its last heartbeat.
func nodeHealthOf(n *api.Node, lastBeat, now time.Time, grace time.Duration) nodeHealth {
	if now.Sub(lastBeat) > grace {
		return healthUnreachable
	}
	for _, c := range n.Status.Conditions {
		if c.Type == api.NodeReady && c.Status == api.ConditionTrue {
			return healthReady
		}
	}
	return healthNotReady
}

// storedHeartbeat is the latest lastHeartbeatTime of n's conditions.
func storedHeartbeat(n *api.Node) time.Time {
	var t time.Time
	for _, c := range n.Status.Conditions {
		if c.LastHeartbeatTime.After(t) {
			t = c.LastHeartbeatTime.Time
		}
	}
	return t
}

// NodeLifecycle watches node heartbeats: it marks silent nodes
// unreachable (Ready=Unknown, unreachable taints, their pods not ready)
// and evicts their pods after PodEvictionTimeout, at a limited rate.
type NodeLifecycle struct {
	cfg   Config
	in    *Informers
	pods  podWriter
	rec   EventRecorder
	queue *Queue

	mu      sync.Mutex
	started time.Time // a node is given the grace period from here
	// skewed holds the nodes whose clock-skew event was recorded, and
	// the skew it reported.
	skewed  map[string]time.Duration
	limiter tokenBucket
	state   disruption
}

func newNodeLifecycle(cfg Config, in *Informers, w podWriter) *NodeLifecycle {
	c := &NodeLifecycle{cfg: cfg, in: in, pods: w, rec: cfg.recorder("node-controller"), queue: NewQueue(cfg.Clock)}
	c.limiter = tokenBucket{rate: cfg.EvictionRate, burst: 1, tokens: 1}
	in.Nodes.AddHandler(func(_, cur api.Object) {
		if cur != nil {
			c.queue.Add(KeyOf(cur))
		}
	})
	return c
}

func (c *NodeLifecycle) worker() *worker {
	return &worker{name: "node-lifecycle", queue: c.queue, sync: c.sync}
}

// start records when monitoring began: nodes not heard from since get
// NodeMonitorGrace from then (the server's in-memory heartbeats are empty
// after a restart).
func (c *NodeLifecycle) start(now time.Time) {
	c.mu.Lock()
	c.started = now
	c.limiter.last = now
	c.mu.Unlock()
}

// lastHeartbeat is the latest of: the in-memory heartbeat, the stored one,
// the node's creation and the start of monitoring.
//
// A stored heartbeat later than now is ignored: it was stamped by a node
// whose clock is ahead, and trusting it would keep a silent node Ready
// for as long as its clock is wrong. (The in-memory heartbeat is the
// server's own time of receipt.)
func (c *NodeLifecycle) lastHeartbeat(n *api.Node, now time.Time) time.Time {
	c.mu.Lock()
	t := c.started
	c.mu.Unlock()
	if h := storedHeartbeat(n); h.After(t) && !h.After(now) {
		t = h
	}
	if n.CreationTimestamp.After(t) {
		t = n.CreationTimestamp.Time
	}
	if c.cfg.Liveness != nil {
		if h, ok := c.cfg.Liveness(n.Name); ok && h.After(t) {
			t = h
		}
	}
	return t
}

// monitorLoop checks every node each NodeMonitorPeriod and runs the
// eviction pass.
func (c *NodeLifecycle) monitorLoop(ctx context.Context) {
	t := c.cfg.Clock.NewTicker(c.cfg.NodeMonitorPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		for _, n := range c.in.Nodes.List() {
			c.queue.Add(KeyOf(n))
		}
		if err := c.Evict(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("node eviction pass failed", "err", err)
		}
	}
}

// sync brings one node's Ready condition and taints in line with its
// health, and marks the pods of an unreachable node not ready. It asks to
// be called again when a healthy node's grace would run out.
func (c *NodeLifecycle) sync(ctx context.Context, key string) (time.Duration, error) {
	obj := c.in.Nodes.Get(key)
	if obj == nil {
		return 0, nil
	}
	n := obj.(*api.Node)
	now := c.cfg.Clock.Now()
	last := c.lastHeartbeat(n, now)
	c.warnSkew(ctx, n, now)
	h := nodeHealthOf(n, last, now, c.cfg.NodeMonitorGrace)
	next, changed := nodeForHealth(n, h, now)
	if changed {
		if err := c.cfg.Store.Update(ctx, next); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return 0, nil
			}
			return 0, fmt.Errorf("update node %s: %w", n.Name, err)
		}
		c.in.Nodes.Assume(next)
		if h == healthUnreachable && !hasTaint(n, TaintUnreachable, api.TaintEffectNoExecute) {
			c.cfg.Logger.Info("node unreachable", "node", n.Name, "lastHeartbeat", last)
			eventf(ctx, c.rec, next, api.EventTypeNormal, ReasonNodeNotReady, "Node %s status is now: %s", n.Name, ReasonNodeNotReady)
		}
	}
	if h == healthUnreachable {
		return 0, c.markPodsNotReady(ctx, n.Name, now)
	}
	return last.Add(c.cfg.NodeMonitorGrace).Sub(now) + time.Millisecond, nil
}

// warnSkew records a Warning event (once, until the node's times look
// right again) when n's stored heartbeat is
// more than maxClockSkew ahead of now: its clock is wrong, which the
// operator must fix (NTP); liveness is judged by the server's clock
// meanwhile.
func (c *NodeLifecycle) warnSkew(ctx context.Context, n *api.Node, now time.Time) {
	skew := storedHeartbeat(n).Sub(now)
	c.mu.Lock()
	_, warned := c.skewed[n.Name]
	if skew <= maxClockSkew {
		delete(c.skewed, n.Name)
		c.mu.Unlock()
		return
	}
	if warned {
		c.mu.Unlock()
		return
	}
	if c.skewed == nil {
		c.skewed = map[string]time.Duration{}
	}
	c.skewed[n.Name] = skew
	c.mu.Unlock()
	c.cfg.Logger.Warn("node clock ahead of the server's", "node", n.Name, "skew", skew.Round(time.Second))
	eventf(ctx, c.rec, n, api.EventTypeWarning, ReasonClockSkew,
		"Node %s reports heartbeat times %v ahead of the server's clock: fix its time (NTP); the server judges its liveness by its own clock", n.Name, skew.Round(time.Second))
}

// nodeForHealth returns n as it should be stored for health h, and
// whether that differs from n. n is not modified.
func nodeForHealth(n *api.Node, h nodeHealth, now time.Time) (*api.Node, bool) {
	if h == healthReady && !hasHealthTaint(n) {
		// The common case, every node every NodeMonitorPeriod: nothing
		// to change, so nothing to build.
		return n, false
	}
	want := map[string]bool{} // key/effect → wanted
	switch h {
	case healthUnreachable:
		want[TaintUnreachable+"/"+api.TaintEffectNoSchedule] = true
		want[TaintUnreachable+"/"+api.TaintEffectNoExecute] = true
	case healthNotReady:
		want[TaintNotReady+"/"+api.TaintEffectNoSchedule] = true
	}
	c := *n
	changed := false
	taints := make([]api.Taint, 0, len(n.Spec.Taints)+2)
	have := map[string]bool{}
	for _, t := range n.Spec.Taints {
		k := t.Key + "/" + t.Effect
		if (t.Key == TaintUnreachable || t.Key == TaintNotReady) && !want[k] {
			changed = true
			continue
		}
		have[k] = true
		taints = append(taints, t)
	}
	for _, k := range []string{TaintUnreachable + "/" + api.TaintEffectNoSchedule, TaintUnreachable + "/" + api.TaintEffectNoExecute, TaintNotReady + "/" + api.TaintEffectNoSchedule} {
		if want[k] && !have[k] {
			key, effect, _ := cut(k)
			taints = append(taints, api.Taint{Key: key, Effect: effect, TimeAdded: api.NewTimePtr(now)})
			changed = true
		}
	}
	if len(taints) == 0 {
		taints = nil
	}
	c.Spec.Taints = taints
	if h == healthUnreachable {
		conds, ch := unknownConditions(n.Status.Conditions, now)
		c.Status.Conditions = conds
		changed = changed || ch
	}
	return &c, changed
}

func cut(k string) (string, string, bool) {
	i := len(k) - 1
	for i >= 0 && k[i] != '/' {
		i--
	}
	if i < 0 {
		return k, "", false
	}
	return k[:i], k[i+1:], true
}

// unknownConditions sets every condition to Unknown, as Kubernetes does
// for a node that stopped posting status, adding Ready=Unknown when the
// node never reported one.
func unknownConditions(cs []api.NodeCondition, now time.Time) ([]api.NodeCondition, bool) {
	out := make([]api.NodeCondition, 0, len(cs)+1)
	changed, ready := false, false
	for _, cond := range cs {
		if cond.Type == api.NodeReady {
			ready = true
		}
		if cond.Status != api.ConditionUnknown {
			cond.Status = api.ConditionUnknown
			cond.Reason = ReasonNodeStatusUnknown
			cond.Message = "Kubelet stopped posting node status."
			cond.LastTransitionTime = api.NewTime(now)
			changed = true
		}
		out = append(out, cond)
	}
	if !ready {
		out = append(out, api.NodeCondition{
			Type: api.NodeReady, Status: api.ConditionUnknown, Reason: ReasonNodeNeverUpdated,
			Message: "Kubelet never posted node status.", LastTransitionTime: api.NewTime(now),
		})
		changed = true
	}
	return out, changed
}

// hasHealthTaint reports a taint this controller manages on n.
func hasHealthTaint(n *api.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == TaintUnreachable || t.Key == TaintNotReady {
			return true
		}
	}
	return false
}

func hasTaint(n *api.Node, key, effect string) bool {
	return taintOf(n, key, effect) != nil
}

func taintOf(n *api.Node, key, effect string) *api.Taint {
	for i := range n.Spec.Taints {
		if t := &n.Spec.Taints[i]; t.Key == key && t.Effect == effect {
			return t
		}
	}
	return nil
}

// markPodsNotReady sets Ready=False on every pod of node that says it is
// ready, so that controllers stop counting them as available.
func (c *NodeLifecycle) markPodsNotReady(ctx context.Context, node string, now time.Time) error {
	var errs []error
	for _, o := range c.in.Pods.ByIndex(indexByNode, node) {
		p := o.(*api.Pod)
		if ready, _ := podReady(p); !ready || finished(p) {
			continue
		}
		cp := *p
		cp.Status.Conditions = slices.Clone(p.Status.Conditions)
		for i := range cp.Status.Conditions {
			if cd := &cp.Status.Conditions[i]; cd.Type == api.PodReady {
				cd.Status = api.ConditionFalse
				cd.Reason = ReasonNodeLost
				cd.Message = fmt.Sprintf("Node %s is unreachable", node)
				cd.LastTransitionTime = api.NewTime(now)
			}
		}
		if err := c.pods.update(ctx, &cp); err != nil && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, fmt.Errorf("mark pod %s/%s not ready: %w", p.Namespace, p.Name, err))
		}
	}
	return errors.Join(errs...)
}
