package controllers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/scheduler"
	"github.com/skiffhq/skiff/storage"
)

// Event reasons of the DaemonSet controller, as Kubernetes'.
const (
	reasonSuccessfulCreate = "SuccessfulCreate"
	reasonSuccessfulDelete = "SuccessfulDelete"
)

// daemonTolerations are added to every daemon pod, as Kubernetes does:
// a daemon keeps running on a node that is unreachable, not ready, under
// pressure or cordoned, since it usually is what the node needs to work.
var daemonTolerations = []api.Toleration{
	{Key: TaintNotReady, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoExecute},
	{Key: TaintUnreachable, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoExecute},
	{Key: scheduler.TaintDiskPressure, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule},
	{Key: scheduler.TaintMemoryPressure, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule},
	{Key: scheduler.TaintPIDPressure, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule},
	{Key: scheduler.TaintUnschedulable, Operator: api.TolerationOpExists, Effect: api.TaintEffectNoSchedule},
}

// daemonTemplate returns ds's template with the daemon tolerations added
// (those it lacks), sharing what it does not change.
func daemonTemplate(ds *api.DaemonSet) *api.PodTemplateSpec {
	t := ds.Spec.Template
	ts := slices.Clone(t.Spec.Tolerations)
	for _, d := range daemonTolerations {
		if !slices.ContainsFunc(ts, func(x api.Toleration) bool { return x.Key == d.Key && x.Effect == d.Effect }) {
			ts = append(ts, d)
		}
	}
	t.Spec.Tolerations = ts
	return &t
}

// nodePlacement says whether a daemon pod belongs on a node: run is true
// when a new pod may be placed there (selector, affinity, and every
// NoSchedule and NoExecute taint tolerated); stay when an existing one may
// keep running (selector, affinity and NoExecute taints only).
func nodePlacement(pi *scheduler.PodInfo, n *api.Node) (run, stay bool) {
	if !scheduler.NodeSelected(pi, n) {
		return false, false
	}
	run, stay = true, true
	ts := pi.Pod.Spec.Tolerations
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		switch t.Effect {
		case api.TaintEffectNoExecute:
			if !scheduler.Tolerates(ts, t) {
				return false, false
			}
		case api.TaintEffectNoSchedule:
			if !scheduler.Tolerates(ts, t) {
				run = false
			}
		}
	}
	return run, stay
}

// nodeDaemon is one node's daemon pods as a DaemonSet sees them.
type nodeDaemon struct {
	node      *api.Node
	run, stay bool
	active    []*api.Pod // not being deleted, not finished
	failed    []*api.Pod
	stopping  int // being deleted, not finished
}

// daemonPlan is one reconcile step of a DaemonSet.
type daemonPlan struct {
	create []string // node names to create a pod on
	delete []*api.Pod
}

// planDaemon decides the next step for a DaemonSet whose current template
// hash is hash, from its pods per node: a pod on each node that should
// run one and has none (unless the previous one is still stopping),
// failed pods and surplus pods removed, pods on nodes that no longer match
// removed, and pods of an old template replaced at most maxUnavailable
// nodes at a time (OnDelete: only when a user deletes them).
func planDaemon(ds *api.DaemonSet, nodes []nodeDaemon, hash string, minReady time.Duration, now time.Time) daemonPlan {
	var plan daemonPlan
	var outdated []*api.Pod
	unavailable := 0
	for _, nd := range nodes {
		plan.delete = append(plan.delete, nd.failed...)
		if !nd.stay {
			plan.delete = append(plan.delete, nd.active...)
			continue
		}
		if len(nd.active) == 0 {
			if nd.run && nd.stopping == 0 && len(nd.failed) == 0 {
				plan.create = append(plan.create, nd.node.Name)
			}
			if nd.run {
				unavailable++
			}
			continue
		}
		// Keep the oldest pod, preferring one of the current template.
		pods := slices.Clone(nd.active)
		slices.SortFunc(pods, func(a, b *api.Pod) int {
			if c := b2i(b.Labels[LabelControllerRevisionHash] == hash) - b2i(a.Labels[LabelControllerRevisionHash] == hash); c != 0 {
				return c
			}
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return slices.Compare([]byte(a.Name), []byte(b.Name))
		})
		plan.delete = append(plan.delete, pods[1:]...)
		keep := pods[0]
		avail, _ := podAvailable(keep, minReady, now)
		if !avail {
			unavailable++
		}
		if keep.Labels[LabelControllerRevisionHash] != hash {
			outdated = append(outdated, keep)
		}
	}
	st := ds.Spec.UpdateStrategy
	if st.Type == api.OnDeleteDaemonSetStrategyType || len(outdated) == 0 {
		return plan
	}
	desired := 0
	for _, nd := range nodes {
		desired += b2i(nd.run)
	}
	maxUnavailable := 1
	if st.RollingUpdate != nil && st.RollingUpdate.MaxUnavailable != nil {
		if v, err := st.RollingUpdate.MaxUnavailable.ScaledValue(desired, true); err == nil {
			maxUnavailable = max(v, 1)
		}
	}
	// Outdated pods that are not available cost nothing to replace;
	// available ones only within the budget.
	budget := maxUnavailable - unavailable
	for _, p := range outdated {
		if avail, _ := podAvailable(p, minReady, now); !avail {
			plan.delete = append(plan.delete, p)
		} else if budget > 0 {
			plan.delete = append(plan.delete, p)
			budget--
		}
	}
	return plan
}

// DaemonSetController runs one pod of each DaemonSet on every node that
// matches it, following node labels and taints as they change.
type DaemonSetController struct {
	cfg   Config
	in    *Informers
	pods  podWriter
	rec   EventRecorder
	queue *Queue
}

func newDaemonSetController(cfg Config, in *Informers, w podWriter) *DaemonSetController {
	c := &DaemonSetController{cfg: cfg, in: in, pods: w, rec: cfg.recorder("daemonset-controller"), queue: NewQueue(cfg.Clock)}
	watchOwnerAndPods(in.DaemonSets, in.Pods, "DaemonSet", c.queue)
	in.Nodes.AddHandler(func(old, cur api.Object) {
		if old != nil && cur != nil && !placementChanged(old.(*api.Node), cur.(*api.Node)) {
			return
		}
		for _, ds := range in.DaemonSets.List() {
			c.queue.Add(KeyOf(ds))
		}
	})
	return c
}

// placementChanged reports whether a node change may change which
// daemons belong on it.
func placementChanged(a, b *api.Node) bool {
	return !reflect.DeepEqual(a.Labels, b.Labels) || !reflect.DeepEqual(a.Spec.Taints, b.Spec.Taints)
}

func (c *DaemonSetController) worker() *worker {
	return &worker{name: "daemonset", queue: c.queue, sync: c.sync}
}

// sync reconciles one DaemonSet and writes its status.
func (c *DaemonSetController) sync(ctx context.Context, key string) (time.Duration, error) {
	obj := c.in.DaemonSets.Get(key)
	if obj == nil {
		return 0, nil
	}
	ds := obj.(*api.DaemonSet)
	if ds.DeletionTimestamp != nil {
		return 0, nil
	}
	now := c.cfg.Clock.Now()
	tmpl := daemonTemplate(ds)
	hash := templateHash(&ds.Spec.Template, nil)
	minReady := time.Duration(ds.Spec.MinReadySeconds) * time.Second
	nodes := c.placement(ds, tmpl)
	plan := planDaemon(ds, nodes, hash, minReady, now)
	var errs []error
	if len(plan.create) > 0 {
		prefix := ds.Name + "-"
		if len(prefix) > maxNamePrefix {
			prefix = prefix[:maxNamePrefix]
		}
		o := owner{kind: "DaemonSet", meta: &ds.ObjectMeta}
		extra := map[string]string{LabelControllerRevisionHash: hash}
		made, err := c.pods.createAll(ctx, len(plan.create), func(i int) (*api.Pod, error) {
			return newPod(tmpl, o, prefix, extra, nil, plan.create[i], now)
		})
		for _, p := range made {
			if p != nil {
				eventf(ctx, c.rec, ds, api.EventTypeNormal, reasonSuccessfulCreate, "Created pod: %s", p.Name)
			}
		}
		if err != nil {
			eventf(ctx, c.rec, ds, api.EventTypeWarning, reasonFailedCreate, "Error creating pods: %v", err)
			errs = append(errs, fmt.Errorf("create pods of daemonset %s/%s: %w", ds.Namespace, ds.Name, err))
		}
	}
	if len(plan.delete) > 0 {
		_, err := slowStart(len(plan.delete), func(i int) error {
			p := plan.delete[i]
			if err := c.pods.delete(ctx, p, now); err != nil {
				return err
			}
			eventf(ctx, c.rec, ds, api.EventTypeNormal, reasonSuccessfulDelete, "Deleted pod: %s", p.Name)
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("delete pods of daemonset %s/%s: %w", ds.Namespace, ds.Name, err))
		}
	}
	wait, err := c.writeStatus(ctx, ds, c.placement(ds, tmpl), hash, minReady, now)
	if err != nil {
		errs = append(errs, err)
	}
	return wait, errors.Join(errs...)
}

// placement returns, for every node and every node holding one of ds's
// pods, whether the daemon belongs there and its pods there.
func (c *DaemonSetController) placement(ds *api.DaemonSet, tmpl *api.PodTemplateSpec) []nodeDaemon {
	pi := scheduler.NewPodInfo(&api.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec})
	byNode := map[string]*nodeDaemon{}
	var order []string
	for _, o := range c.in.Nodes.List() {
		n := o.(*api.Node)
		run, stay := nodePlacement(pi, n)
		byNode[n.Name] = &nodeDaemon{node: n, run: run, stay: stay}
		order = append(order, n.Name)
	}
	for _, p := range ownedPods(c.in, ds.UID) {
		nd := byNode[p.Spec.NodeName]
		if nd == nil {
			// A node that is gone (or a pod without one): not a place
			// for the daemon.
			nd = &nodeDaemon{node: &api.Node{ObjectMeta: api.ObjectMeta{Name: p.Spec.NodeName}}}
			byNode[p.Spec.NodeName] = nd
			order = append(order, p.Spec.NodeName)
		}
		switch {
		case p.Status.Phase == api.PodFailed:
			nd.failed = append(nd.failed, p)
		case p.Status.Phase == api.PodSucceeded:
			// Daemons restart Always; a succeeded one is simply replaced.
			nd.failed = append(nd.failed, p)
		case p.DeletionTimestamp != nil:
			nd.stopping++
		default:
			nd.active = append(nd.active, p)
		}
	}
	slices.Sort(order)
	out := make([]nodeDaemon, len(order))
	for i, name := range order {
		out[i] = *byNode[name]
	}
	return out
}

// daemonSetStatus computes ds's status.
func daemonSetStatus(ds *api.DaemonSet, nodes []nodeDaemon, hash string, minReady time.Duration, now time.Time) (api.DaemonSetStatus, time.Duration) {
	st := api.DaemonSetStatus{ObservedGeneration: ds.Generation, Conditions: ds.Status.Conditions}
	var wait time.Duration
	for _, nd := range nodes {
		if nd.run {
			st.DesiredNumberScheduled++
		}
		if len(nd.active) == 0 {
			continue
		}
		if !nd.stay {
			st.NumberMisscheduled++
			continue
		}
		st.CurrentNumberScheduled++
		ready, avail, updated := false, false, false
		for _, p := range nd.active {
			r, _ := podReady(p)
			a, left := podAvailable(p, minReady, now)
			ready, avail = ready || r, avail || a
			updated = updated || p.Labels[LabelControllerRevisionHash] == hash
			if left > 0 && (wait == 0 || left < wait) {
				wait = left
			}
		}
		st.NumberReady += int32(b2i(ready))
		st.NumberAvailable += int32(b2i(avail))
		st.UpdatedNumberScheduled += int32(b2i(updated))
	}
	st.NumberUnavailable = max(st.DesiredNumberScheduled-st.NumberAvailable, 0)
	return st, wait
}

func (c *DaemonSetController) writeStatus(ctx context.Context, ds *api.DaemonSet, nodes []nodeDaemon, hash string, minReady time.Duration, now time.Time) (time.Duration, error) {
	st, wait := daemonSetStatus(ds, nodes, hash, minReady, now)
	if reflect.DeepEqual(st, ds.Status) {
		return wait, nil
	}
	cp := *ds
	cp.Status = st
	if err := c.cfg.Store.Update(ctx, &cp); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("update status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	c.in.DaemonSets.Assume(&cp)
	return wait, nil
}
