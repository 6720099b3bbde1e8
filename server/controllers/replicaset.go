package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/uid"
	"github.com/skiffhq/skiff/storage"
)

// ReplicaSetController keeps each ReplicaSet that no Deployment controls
// at its replicas and writes its status. A ReplicaSet a Deployment
// controls is left to the DeploymentController, which creates and
// deletes its pods as its rollout needs and writes its spec and status.
type ReplicaSetController struct {
	cfg   Config
	in    *Informers
	pods  podWriter
	rec   EventRecorder
	queue *Queue
}

func newReplicaSetController(cfg Config, in *Informers, w podWriter) *ReplicaSetController {
	c := &ReplicaSetController{cfg: cfg, in: in, pods: w, rec: cfg.recorder("replicaset-controller"), queue: NewQueue(cfg.Clock)}
	watchOwnerAndPods(in.ReplicaSets, in.Pods, "ReplicaSet", c.queue)
	return c
}

func (c *ReplicaSetController) worker() *worker {
	return &worker{name: "replicaset", queue: c.queue, sync: c.sync}
}

// controlledByDeployment reports whether rs belongs to a Deployment.
func controlledByDeployment(rs *api.ReplicaSet) bool {
	ref := controllerRef(&rs.ObjectMeta)
	return ref != nil && ref.Kind == "Deployment"
}

func rsReplicas(rs *api.ReplicaSet) int {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return int(*rs.Spec.Replicas)
}

func (c *ReplicaSetController) sync(ctx context.Context, key string) (time.Duration, error) {
	obj := c.in.ReplicaSets.Get(key)
	if obj == nil {
		return 0, nil
	}
	rs := obj.(*api.ReplicaSet)
	if rs.DeletionTimestamp != nil || controlledByDeployment(rs) {
		return 0, nil
	}
	now := c.cfg.Clock.Now()
	var errs []error
	var active []*api.Pod
	for _, p := range ownedPods(c.in, rs.UID) {
		if isActive(p) {
			active = append(active, p)
		}
	}
	switch want := rsReplicas(rs); {
	case len(active) < want:
		o := owner{kind: "ReplicaSet", meta: &rs.ObjectMeta}
		made, err := c.pods.createAll(ctx, want-len(active), func(int) (*api.Pod, error) {
			return newPod(&rs.Spec.Template, o, podPrefix(rs.Name), nil, nil, "", now)
		})
		created := createdCount(made)
		if created > 0 {
			eventf(ctx, c.rec, rs, api.EventTypeNormal, reasonSuccessfulCreate, "Created %d pods", created)
		}
		if err != nil {
			eventf(ctx, c.rec, rs, api.EventTypeWarning, reasonFailedCreate, "Error creating: %v", err)
			errs = append(errs, fmt.Errorf("create pods of replica set %s: %w", key, err))
		}
	case len(active) > want:
		victims := pickForDeletion(active, len(active)-want)
		if _, err := slowStart(len(victims), func(i int) error { return c.pods.delete(ctx, victims[i], now) }); err != nil {
			errs = append(errs, fmt.Errorf("delete pods of replica set %s: %w", key, err))
		}
	}
	wait, err := writeReplicaSetStatus(ctx, c.cfg.Store, c.in, rs, now)
	if err != nil {
		errs = append(errs, err)
	}
	return wait, errors.Join(errs...)
}

// isActive is active for pods, named for readability at call sites that
// also deal with ReplicaSets.
func isActive(p *api.Pod) bool { return active(p) }

// podPrefix is the generateName of a controller's pods: its name and a
// dash, cut to what leaves room for the random suffix.
func podPrefix(name string) string {
	prefix := name + "-"
	if len(prefix) > maxNamePrefix {
		prefix = prefix[:maxNamePrefix]
	}
	return prefix
}

// replicaSetStatus computes rs's status from its pods at now, and how
// soon a ready pod becomes available.
func replicaSetStatus(in *Informers, rs *api.ReplicaSet, now time.Time) (api.ReplicaSetStatus, time.Duration) {
	st := api.ReplicaSetStatus{ObservedGeneration: rs.Generation, Conditions: rs.Status.Conditions}
	minReady := time.Duration(rs.Spec.MinReadySeconds) * time.Second
	var wait time.Duration
	for _, p := range ownedPods(in, rs.UID) {
		if !isActive(p) {
			continue
		}
		st.Replicas++
		st.FullyLabeledReplicas++
		if r, _ := podReady(p); r {
			st.ReadyReplicas++
		}
		avail, left := podAvailable(p, minReady, now)
		if avail {
			st.AvailableReplicas++
		}
		if left > 0 && (wait == 0 || left < wait) {
			wait = left
		}
	}
	return st, wait
}

// writeReplicaSetStatus stores rs's status when it changed.
func writeReplicaSetStatus(ctx context.Context, store *storage.Store, in *Informers, rs *api.ReplicaSet, now time.Time) (time.Duration, error) {
	st, wait := replicaSetStatus(in, rs, now)
	if reflect.DeepEqual(st, rs.Status) {
		return wait, nil
	}
	cp := *rs
	cp.Status = st
	if err := store.Update(ctx, &cp); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("update status of replica set %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	in.ReplicaSets.Assume(&cp)
	return wait, nil
}

// newReplicaSet builds the ReplicaSet of d's revision hash from template
// t: named <deployment>-<hash>, its selector and template labelled with
// the hash, controlled by d, with 0 replicas. The result is prepared as
// the API server prepares a create, defaulted and validated.
func newReplicaSet(d *api.Deployment, t *api.PodTemplateSpec, hash string, annotations map[string]string, now time.Time) (*api.ReplicaSet, error) {
	tc := copyTemplate(t)
	if tc.Labels == nil {
		tc.Labels = map[string]string{}
	}
	tc.Labels[LabelPodTemplateHash] = hash
	sel := &api.LabelSelector{MatchLabels: map[string]string{LabelPodTemplateHash: hash}}
	if d.Spec.Selector != nil {
		maps.Copy(sel.MatchLabels, d.Spec.Selector.MatchLabels)
		sel.MatchLabels[LabelPodTemplateHash] = hash
		sel.MatchExpressions = d.Spec.Selector.MatchExpressions
	}
	zero := int32(0)
	rs := &api.ReplicaSet{
		ObjectMeta: api.ObjectMeta{
			Name: rsName(d, hash), Namespace: d.Namespace, UID: uid.New(), Generation: 1,
			CreationTimestamp: api.NewTime(now),
			Labels:            maps.Clone(tc.Labels),
			Annotations:       annotations,
			OwnerReferences:   []api.OwnerReference{owner{kind: "Deployment", meta: &d.ObjectMeta}.ref()},
		},
		Spec: api.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: tc},
	}
	api.SetTypeMeta(rs)
	api.SetDefaults(rs)
	if errs := api.Validate(rs); len(errs) > 0 {
		return nil, fmt.Errorf("replica set for deployment %s/%s is invalid: %w", d.Namespace, d.Name, errs)
	}
	return rs, nil
}
