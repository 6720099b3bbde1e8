package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// annotationTemplateHash records on a Deployment the pod-template-hash of
// its current revision (AnnotationRevision), so the revision number is
// bumped exactly when the template changes.
const annotationTemplateHash = "skiff.io/pod-template-hash"

// Deployment condition types and reasons, as Kubernetes writes them.
const (
	DeploymentAvailable   = "Available"
	DeploymentProgressing = "Progressing"

	reasonMinimumAvailable   = "MinimumReplicasAvailable"
	reasonMinimumUnavailable = "MinimumReplicasUnavailable"
	reasonNewRSAvailable     = "NewReplicaSetAvailable"
	reasonRSUpdated          = "ReplicaSetUpdated"
	reasonDeadlineExceeded   = "ProgressDeadlineExceeded"
	reasonScaling            = "ScalingReplicaSet"
	reasonFailedCreate       = "FailedCreate"
)

// maxNamePrefix bounds the generated part of a pod name, as Kubernetes'
// generateName (63 less the 5-character suffix).
const maxNamePrefix = 58

// DeploymentController keeps each Deployment's pods at its replicas and
// rolls template changes out. Each template revision has a ReplicaSet
// (see deployment_rs.go) that owns its pods, which share its
// pod-template-hash label.
type DeploymentController struct {
	cfg   Config
	in    *Informers
	pods  podWriter
	rec   EventRecorder
	queue *Queue
}

func newDeploymentController(cfg Config, in *Informers, w podWriter) *DeploymentController {
	c := &DeploymentController{cfg: cfg, in: in, pods: w, rec: cfg.recorder("deployment-controller"), queue: NewQueue(cfg.Clock)}
	watchOwnerAndPods(in.Deployments, in.Pods, "Deployment", c.queue) // pods from before ReplicaSets
	watchOwnerAndPods(in.Deployments, in.ReplicaSets, "Deployment", c.queue)
	in.Pods.AddHandler(func(old, cur api.Object) {
		// A pod of a ReplicaSet queues the Deployment that controls it,
		// unless the change is none the Deployment counts.
		if op, ok := old.(*api.Pod); ok {
			if cp, ok := cur.(*api.Pod); ok && !rolloutChange(op, cp) {
				return
			}
		}
		for _, o := range []api.Object{old, cur} {
			if o == nil {
				continue
			}
			ref := controllerRef(o.GetObjectMeta())
			if ref == nil || ref.Kind != "ReplicaSet" {
				continue
			}
			ns := o.GetObjectMeta().Namespace
			if rs := in.ReplicaSets.Get(ns + "/" + ref.Name); rs != nil {
				if dref := controllerRef(rs.GetObjectMeta()); dref != nil && dref.Kind == "Deployment" {
					c.queue.Add(ns + "/" + dref.Name)
				}
			}
		}
	})
	return c
}

// rolloutChange says whether a pod's update changes what a Deployment's
// sync reads from its pods (groupPods, replicaSetStatus): whether the pod
// counts (deleted, finished), whether it is ready and since when, its
// labels (the template hash, the selector) and its controller. A
// placement's binds, the agents' other status fields and the informer's
// own echo of a create change none of it. Each of them queued the
// Deployment, whose sync walks every one of its pods: in a placement of
// 10,000 replicas with 10,000 agents those syncs took 6 % of the
// server's CPU (docs/benchmarks.md, "Fleet, round thirty-five"). What
// only a sync reads (the victims of a scale-down prefer pods not yet on a
// node) is read afresh by the sync a counted change or the Deployment's
// own change queues.
func rolloutChange(old, cur *api.Pod) bool {
	if (old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) || finished(old) != finished(cur) {
		return true
	}
	r0, t0 := podReady(old)
	r1, t1 := podReady(cur)
	if r0 != r1 || !t0.Equal(t1) || !maps.Equal(old.Labels, cur.Labels) {
		return true
	}
	c0, c1 := controllerRef(old.GetObjectMeta()), controllerRef(cur.GetObjectMeta())
	return (c0 == nil) != (c1 == nil) || c0 != nil && (c0.UID != c1.UID || c0.Kind != c1.Kind || c0.Name != c1.Name)
}

func (c *DeploymentController) worker() *worker {
	return &worker{name: "deployment", queue: c.queue, sync: c.sync}
}

// ownedPods returns the pods whose controller is the object with uid.
func ownedPods(in *Informers, uid string) []*api.Pod {
	objs := in.Pods.ByIndex(indexByOwner, uid)
	out := make([]*api.Pod, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Pod)
	}
	return out
}

// sync reconciles one Deployment: adopts pods it controls directly,
// makes sure the ReplicaSet of its template exists with the newest
// revision, takes one rollout step, and writes its ReplicaSets' and its
// own status.
func (c *DeploymentController) sync(ctx context.Context, key string) (time.Duration, error) {
	obj := c.in.Deployments.Get(key)
	if obj == nil {
		return 0, nil // deleted: the garbage collector removes its replica sets
	}
	d := obj.(*api.Deployment)
	if d.DeletionTimestamp != nil {
		return 0, nil
	}
	now := c.cfg.Clock.Now()
	hash := templateHash(&d.Spec.Template, d.Status.CollisionCount)
	rss, err := c.adoptPods(ctx, d, deploymentReplicaSets(c.in, d), hash, now)
	if err != nil {
		return 0, err
	}
	d, newRS, rss, err := c.syncRevision(ctx, d, hash, rss, now)
	if err != nil {
		return 0, err
	}
	minReady := time.Duration(d.Spec.MinReadySeconds) * time.Second
	var errs []error
	if !d.Spec.Paused && newRS != nil {
		g := groupPods(deploymentPods(c.in, rss), hash, minReady, now)
		if err := c.apply(ctx, d, newRS, g, planRollout(d, g), now); err != nil {
			errs = append(errs, err)
		}
	}
	rsWait, err := c.syncReplicaSets(ctx, d, rss, hash, now)
	if err != nil {
		errs = append(errs, err)
	}
	g := groupPods(deploymentPods(c.in, deploymentReplicaSets(c.in, d)), hash, minReady, now)
	wait, err := c.writeStatus(ctx, d, g, now)
	if err != nil {
		errs = append(errs, err)
	}
	for _, w := range []time.Duration{g.wait, rsWait} {
		if w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
	}
	return wait, errors.Join(errs...)
}

// rsName is the name Kubernetes would give the ReplicaSet of a revision.
func rsName(d *api.Deployment, hash string) string { return d.Name + "-" + hash }

// apply carries out plan for d: creates new pods (slow start) and deletes
// the chosen ones, recording a ScalingReplicaSet event per revision
// scaled.
func (c *DeploymentController) apply(ctx context.Context, d *api.Deployment, newRS *api.ReplicaSet, g podGroups, plan rolloutPlan, now time.Time) error {
	var errs []error
	if plan.create > 0 {
		prefix := podPrefix(newRS.Name)
		ann := map[string]string{AnnotationRevision: d.Annotations[AnnotationRevision]}
		o := owner{kind: "ReplicaSet", meta: &newRS.ObjectMeta}
		made, err := c.pods.createAll(ctx, plan.create, func(int) (*api.Pod, error) {
			return newPod(&newRS.Spec.Template, o, prefix, nil, ann, "", now)
		})
		created := createdCount(made)
		if created > 0 {
			eventf(ctx, c.rec, d, api.EventTypeNormal, reasonScaling, "Scaled up replica set %s to %d", rsName(d, g.hash), len(g.newPods)+created)
		}
		if err != nil {
			eventf(ctx, c.rec, d, api.EventTypeWarning, reasonFailedCreate, "Error creating pods: %v", err)
			errs = append(errs, fmt.Errorf("create pods of deployment %s/%s: %w", d.Namespace, d.Name, err))
		}
	}
	if len(plan.delete) > 0 {
		deleted := map[string]int{} // hash → how many deleted
		ok := make([]bool, len(plan.delete))
		_, err := slowStart(len(plan.delete), func(i int) error {
			if err := c.pods.delete(ctx, plan.delete[i], now); err != nil {
				return err
			}
			ok[i] = true
			return nil
		})
		remaining := map[string]int{}
		for _, p := range append(append([]*api.Pod(nil), g.newPods...), g.oldPods...) {
			remaining[p.Labels[LabelPodTemplateHash]]++
		}
		for i, p := range plan.delete {
			if ok[i] {
				deleted[p.Labels[LabelPodTemplateHash]]++
			}
		}
		for h, n := range deleted {
			eventf(ctx, c.rec, d, api.EventTypeNormal, reasonScaling, "Scaled down replica set %s to %d", rsName(d, h), remaining[h]-n)
		}
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, fmt.Errorf("delete pods of deployment %s/%s: %w", d.Namespace, d.Name, err))
		}
	}
	return errors.Join(errs...)
}

// deploymentStatus computes d's status from its pods at now.
func deploymentStatus(d *api.Deployment, g podGroups, now time.Time) api.DeploymentStatus {
	desired := desiredReplicas(d)
	_, maxUnavailable := rollingBounds(d)
	avail := g.newAvail + g.oldAvail
	st := api.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            int32(len(g.newPods) + len(g.oldPods)),
		UpdatedReplicas:     int32(len(g.newPods)),
		ReadyReplicas:       int32(g.newReady + g.oldReady),
		AvailableReplicas:   int32(avail),
		UnavailableReplicas: int32(max(desired-avail, 0)),
		CollisionCount:      d.Status.CollisionCount,
	}
	conds := d.Status.Conditions
	if avail >= desired-maxUnavailable {
		conds = setCondition(conds, api.DeploymentCondition{Type: DeploymentAvailable, Status: api.ConditionTrue,
			Reason: reasonMinimumAvailable, Message: "Deployment has minimum availability."}, now)
	} else {
		conds = setCondition(conds, api.DeploymentCondition{Type: DeploymentAvailable, Status: api.ConditionFalse,
			Reason: reasonMinimumUnavailable, Message: "Deployment does not have minimum availability."}, now)
	}
	complete := len(g.oldPods) == 0 && len(g.newPods) == desired && g.newAvail == desired
	rs := rsName(d, g.hash)
	progressed := d.Status.UpdatedReplicas != st.UpdatedReplicas || d.Status.AvailableReplicas != st.AvailableReplicas ||
		d.Status.Replicas != st.Replicas || d.Status.ObservedGeneration != st.ObservedGeneration
	prev := findCondition(d.Status.Conditions, DeploymentProgressing)
	switch {
	case complete:
		conds = setCondition(conds, api.DeploymentCondition{Type: DeploymentProgressing, Status: api.ConditionTrue,
			Reason: reasonNewRSAvailable, Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs)}, now)
	case progressed || prev == nil || prev.Reason == reasonNewRSAvailable:
		c := api.DeploymentCondition{Type: DeploymentProgressing, Status: api.ConditionTrue,
			Reason: reasonRSUpdated, Message: fmt.Sprintf("ReplicaSet %q is progressing.", rs)}
		conds = setCondition(conds, c, now)
		// Progress itself refreshes the update time, which the deadline
		// is measured from.
		findCondition(conds, DeploymentProgressing).LastUpdateTime = api.NewTime(now)
	case deadlineExceeded(d, prev, now):
		conds = setCondition(conds, api.DeploymentCondition{Type: DeploymentProgressing, Status: api.ConditionFalse,
			Reason: reasonDeadlineExceeded, Message: fmt.Sprintf("ReplicaSet %q has timed out progressing.", rs)}, now)
	}
	st.Conditions = conds
	return st
}

func deadlineExceeded(d *api.Deployment, prev *api.DeploymentCondition, now time.Time) bool {
	if d.Spec.ProgressDeadlineSeconds == nil || prev == nil || prev.Reason != reasonRSUpdated {
		return false
	}
	return now.Sub(prev.LastUpdateTime.Time) > time.Duration(*d.Spec.ProgressDeadlineSeconds)*time.Second
}

// writeStatus stores d's status when it changed. It returns when d
// should be looked at again for its progress deadline.
func (c *DeploymentController) writeStatus(ctx context.Context, d *api.Deployment, g podGroups, now time.Time) (time.Duration, error) {
	st := deploymentStatus(d, g, now)
	var wait time.Duration
	if p := findCondition(st.Conditions, DeploymentProgressing); p != nil && p.Reason == reasonRSUpdated && d.Spec.ProgressDeadlineSeconds != nil {
		wait = p.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds)*time.Second).Sub(now) + time.Second
	}
	if reflect.DeepEqual(st, d.Status) {
		return wait, nil
	}
	cp := *d
	cp.Status = st
	if err := c.cfg.Store.Update(ctx, &cp); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("update status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	c.in.Deployments.Assume(&cp)
	return wait, nil
}

// setCondition returns a copy of conds with cond set, keeping the
// transition time when the status is unchanged and both times when
// nothing changed.
func setCondition(conds []api.DeploymentCondition, cond api.DeploymentCondition, now time.Time) []api.DeploymentCondition {
	out := make([]api.DeploymentCondition, 0, len(conds)+1)
	found := false
	for _, c := range conds {
		if c.Type != cond.Type {
			out = append(out, c)
			continue
		}
		found = true
		switch {
		case c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message:
			out = append(out, c)
		case c.Status == cond.Status:
			cond.LastTransitionTime = c.LastTransitionTime
			cond.LastUpdateTime = api.NewTime(now)
			out = append(out, cond)
		default:
			cond.LastTransitionTime = api.NewTime(now)
			cond.LastUpdateTime = api.NewTime(now)
			out = append(out, cond)
		}
	}
	if !found {
		cond.LastTransitionTime = api.NewTime(now)
		cond.LastUpdateTime = api.NewTime(now)
		out = append(out, cond)
	}
	return out
}

func findCondition(conds []api.DeploymentCondition, typ string) *api.DeploymentCondition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
