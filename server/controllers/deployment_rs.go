package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// This file holds a Deployment's ReplicaSets: one per template revision,
// named <deployment>-<pod-template-hash>, carrying the revision number
// (deployment.kubernetes.io/revision) and change cause that kubectl
// rollout history and undo read. The Deployment controller creates and
// deletes the pods of its ReplicaSets itself (its rollout plan picks
// pods, not counts) and writes each ReplicaSet's replicas and status to
// match, so kubectl sees what it sees on Kubernetes.

// AnnotationChangeCause is the change cause kubectl rollout history shows.
const AnnotationChangeCause = "kubernetes.io/change-cause"

// deploymentReplicaSets returns the ReplicaSets d controls.
func deploymentReplicaSets(in *Informers, d *api.Deployment) []*api.ReplicaSet {
	objs := in.ReplicaSets.ByIndex(indexByOwner, d.UID)
	out := make([]*api.ReplicaSet, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*api.ReplicaSet))
	}
	return out
}

// deploymentPods returns the pods of d's ReplicaSets.
func deploymentPods(in *Informers, rss []*api.ReplicaSet) []*api.Pod {
	var out []*api.Pod
	for _, rs := range rss {
		out = append(out, ownedPods(in, rs.UID)...)
	}
	return out
}

func revisionOfRS(rs *api.ReplicaSet) int {
	n, err := strconv.Atoi(rs.Annotations[AnnotationRevision])
	if err != nil {
		return 0
	}
	return n
}

// adoptPods moves pods that d controls directly (made before Deployments
// had ReplicaSets) under the ReplicaSet of their revision, creating it
// from the pod when it is missing. Only the owner reference changes: the
// pods keep running. It returns d's ReplicaSets afterwards.
func (c *DeploymentController) adoptPods(ctx context.Context, d *api.Deployment, rss []*api.ReplicaSet, hash string, now time.Time) ([]*api.ReplicaSet, error) {
	legacy := ownedPods(c.in, d.UID)
	if len(legacy) == 0 {
		return rss, nil
	}
	byHash := map[string]*api.ReplicaSet{}
	for _, rs := range rss {
		byHash[rs.Labels[LabelPodTemplateHash]] = rs
	}
	var errs []error
	for _, p := range legacy {
		h := p.Labels[LabelPodTemplateHash]
		if h == "" {
			continue
		}
		rs := byHash[h]
		if rs == nil {
			t := &d.Spec.Template
			if h != hash {
				// An older revision: its template is what its pod runs.
				t = &api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: maps.Clone(p.Labels)}, Spec: p.Spec}
				t.Spec.NodeName = ""
				delete(t.Labels, LabelPodTemplateHash)
			}
			ann := map[string]string{AnnotationRevision: cmp.Or(p.Annotations[AnnotationRevision], "1")}
			created, err := c.createReplicaSet(ctx, d, t, h, ann, now)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rs = created
			byHash[h] = rs
			rss = append(rss, rs)
		}
		cp := *p
		cp.OwnerReferences = nil
		for _, r := range p.OwnerReferences {
			if r.UID != d.UID {
				cp.OwnerReferences = append(cp.OwnerReferences, r)
			}
		}
		cp.OwnerReferences = append(cp.OwnerReferences, owner{kind: "ReplicaSet", meta: &rs.ObjectMeta}.ref())
		if err := c.pods.update(ctx, &cp); err != nil && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, fmt.Errorf("adopt pod %s into replica set %s: %w", KeyOf(p), rs.Name, err))
		}
	}
	return rss, errors.Join(errs...)
}

// createReplicaSet stores a new ReplicaSet of d for template t.
func (c *DeploymentController) createReplicaSet(ctx context.Context, d *api.Deployment, t *api.PodTemplateSpec, hash string, ann map[string]string, now time.Time) (*api.ReplicaSet, error) {
	rs, err := newReplicaSet(d, t, hash, ann, now)
	if err != nil {
		return nil, err
	}
	err = c.cfg.Store.Create(ctx, rs)
	if errors.Is(err, storage.ErrExists) {
		return c.nameTaken(ctx, d, rs.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("create replica set %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	c.in.ReplicaSets.Assume(rs)
	return rs, nil
}

// nameTaken handles a ReplicaSet name that exists already: d's own (not
// seen by the informer yet) is used; anyone else's is a hash collision,
// and d's status.collisionCount goes up so the next try hashes anew, as
// Kubernetes does.
func (c *DeploymentController) nameTaken(ctx context.Context, d *api.Deployment, name string) (*api.ReplicaSet, error) {
	obj, err := c.cfg.Store.Get(ctx, "replicasets", d.Namespace, name)
	if err != nil {
		return nil, fmt.Errorf("read replica set %s/%s: %w", d.Namespace, name, err)
	}
	rs := obj.(*api.ReplicaSet)
	if ref := controllerRef(&rs.ObjectMeta); ref != nil && ref.UID == d.UID {
		c.in.ReplicaSets.Assume(rs)
		return rs, nil
	}
	cp := *d
	n := int32(1)
	if d.Status.CollisionCount != nil {
		n = *d.Status.CollisionCount + 1
	}
	cp.Status.CollisionCount = &n
	if err := c.cfg.Store.Update(ctx, &cp); err != nil {
		return nil, fmt.Errorf("record hash collision of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	c.in.Deployments.Assume(&cp)
	return nil, fmt.Errorf("replica set name %s/%s is taken by another object; collision count now %d: %w", d.Namespace, name, n, storage.ErrConflict)
}

// syncRevision makes sure the ReplicaSet of d's current template (hash)
// exists and carries the newest revision number, as Kubernetes numbers
// them: a new template, or going back to an old one (rollout undo), gets
// one more than the highest of the others. It records the revision and
// hash on d and returns d as stored, the new ReplicaSet (nil when d is
// paused and it does not exist yet) and all of d's ReplicaSets.
func (c *DeploymentController) syncRevision(ctx context.Context, d *api.Deployment, hash string, rss []*api.ReplicaSet, now time.Time) (*api.Deployment, *api.ReplicaSet, []*api.ReplicaSet, error) {
	var newRS *api.ReplicaSet
	maxOld := 0
	for _, rs := range rss {
		if rs.Labels[LabelPodTemplateHash] == hash {
			newRS = rs
			continue
		}
		maxOld = max(maxOld, revisionOfRS(rs))
	}
	if newRS == nil && d.Spec.Paused {
		return d, nil, rss, nil
	}
	// A manifest re-applied without the annotation keeps counting.
	if r, err := strconv.Atoi(d.Annotations[AnnotationRevision]); err == nil && d.Annotations[annotationTemplateHash] != hash {
		maxOld = max(maxOld, r)
	}
	want := maxOld + 1
	switch {
	case newRS == nil:
		ann := map[string]string{AnnotationRevision: strconv.Itoa(want)}
		if cc, ok := d.Annotations[AnnotationChangeCause]; ok {
			ann[AnnotationChangeCause] = cc
		}
		rs, err := c.createReplicaSet(ctx, d, &d.Spec.Template, hash, ann, now)
		if err != nil {
			return nil, nil, nil, err
		}
		newRS = rs
		rss = append(rss, rs)
	case revisionOfRS(newRS) < want || newRS.Annotations[AnnotationChangeCause] != d.Annotations[AnnotationChangeCause]:
		cp := *newRS
		cp.Annotations = maps.Clone(newRS.Annotations)
		if cp.Annotations == nil {
			cp.Annotations = map[string]string{}
		}
		if revisionOfRS(newRS) < want {
			cp.Annotations[AnnotationRevision] = strconv.Itoa(want)
		} else {
			want = revisionOfRS(newRS)
		}
		if cc, ok := d.Annotations[AnnotationChangeCause]; ok {
			cp.Annotations[AnnotationChangeCause] = cc
		} else {
			delete(cp.Annotations, AnnotationChangeCause)
		}
		if err := c.cfg.Store.Update(ctx, &cp); err != nil {
			return nil, nil, nil, fmt.Errorf("update revision of replica set %s/%s: %w", cp.Namespace, cp.Name, err)
		}
		c.in.ReplicaSets.Assume(&cp)
		newRS = &cp
		for i := range rss {
			if rss[i].UID == cp.UID {
				rss[i] = &cp
			}
		}
	default:
		want = revisionOfRS(newRS)
	}
	rev := strconv.Itoa(want)
	if d.Annotations[AnnotationRevision] == rev && d.Annotations[annotationTemplateHash] == hash {
		return d, newRS, rss, nil
	}
	cp := *d
	cp.Annotations = maps.Clone(d.Annotations)
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	cp.Annotations[AnnotationRevision] = rev
	cp.Annotations[annotationTemplateHash] = hash
	if err := c.cfg.Store.Update(ctx, &cp); err != nil {
		return nil, nil, nil, fmt.Errorf("record revision of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	c.in.Deployments.Assume(&cp)
	return &cp, newRS, rss, nil
}

// syncReplicaSets writes each of d's ReplicaSets' replicas (the pods of
// it that are active now) and status, then deletes the oldest empty old
// ReplicaSets beyond d's revisionHistoryLimit. It returns the soonest a
// ReplicaSet's pod becomes available.
func (c *DeploymentController) syncReplicaSets(ctx context.Context, d *api.Deployment, rss []*api.ReplicaSet, hash string, now time.Time) (time.Duration, error) {
	var errs []error
	var wait time.Duration
	var empty []*api.ReplicaSet
	for _, rs := range rss {
		st, w := replicaSetStatus(c.in, rs, now)
		if w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
		pods := ownedPods(c.in, rs.UID)
		if rs.Labels[LabelPodTemplateHash] != hash && st.Replicas == 0 && len(pods) == 0 {
			empty = append(empty, rs)
		}
		n := st.Replicas
		if rs.Spec.Replicas != nil && *rs.Spec.Replicas == n && rs.Spec.MinReadySeconds == d.Spec.MinReadySeconds && statusEqual(rs.Status, st) {
			continue
		}
		cp := *rs
		cp.Spec.Replicas = &n
		cp.Spec.MinReadySeconds = d.Spec.MinReadySeconds
		if !specEqual(rs, &cp) {
			cp.Generation++
			st.ObservedGeneration = cp.Generation
		}
		cp.Status = st
		if err := c.cfg.Store.Update(ctx, &cp); err != nil {
			if !errors.Is(err, storage.ErrNotFound) {
				errs = append(errs, fmt.Errorf("update replica set %s/%s: %w", rs.Namespace, rs.Name, err))
			}
			continue
		}
		c.in.ReplicaSets.Assume(&cp)
	}
	limit := int(api.DefaultRevisionHistoryLimit)
	if d.Spec.RevisionHistoryLimit != nil {
		limit = int(*d.Spec.RevisionHistoryLimit)
	}
	old := len(rss) - 1
	if extra := old - limit; extra > 0 && len(empty) > 0 {
		slices.SortFunc(empty, func(a, b *api.ReplicaSet) int { return cmp.Compare(revisionOfRS(a), revisionOfRS(b)) })
		for _, rs := range empty[:min(extra, len(empty))] {
			out, err := c.cfg.Store.Delete(ctx, "replicasets", rs.Namespace, rs.Name, rs.ResourceVersion)
			if err != nil {
				if !errors.Is(err, storage.ErrNotFound) {
					errs = append(errs, fmt.Errorf("delete old replica set %s/%s: %w", rs.Namespace, rs.Name, err))
				}
				continue
			}
			c.in.ReplicaSets.AssumeDeleted(rs, revisionOf(out))
		}
	}
	return wait, errors.Join(errs...)
}

func statusEqual(a, b api.ReplicaSetStatus) bool {
	return a.Replicas == b.Replicas && a.ReadyReplicas == b.ReadyReplicas && a.AvailableReplicas == b.AvailableReplicas &&
		a.FullyLabeledReplicas == b.FullyLabeledReplicas && a.ObservedGeneration == b.ObservedGeneration
}

func specEqual(a, b *api.ReplicaSet) bool {
	ra, rb := rsReplicas(a), rsReplicas(b)
	return ra == rb && a.Spec.MinReadySeconds == b.Spec.MinReadySeconds
}
