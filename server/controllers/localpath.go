package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/uid"
	"github.com/skiffhq/skiff/storage"
)

// DefaultVolumesDir is where agents keep local-path volumes when the
// data dir is the default one; a volume's hostPath shows it.
const DefaultVolumesDir = "/var/lib/skiff/agent/volumes"

// Claim and volume events, as Kubernetes names them.
const (
	reasonProvisioningDone   = "ProvisioningSucceeded"
	annotationBindCompleted  = "pv.kubernetes.io/bind-completed"
	annotationProvisionedBy  = "pv.kubernetes.io/provisioned-by"
	annotationSelectedNode   = "volume.kubernetes.io/selected-node"
	annotationStorageProvis  = "volume.kubernetes.io/storage-provisioner"
	localPathDirectoryOrMake = "DirectoryOrCreate"
)

// LocalPathController is the built-in local-path provisioner: a claim of
// a local-path class is bound, once the first pod that uses it is
// scheduled (WaitForFirstConsumer), to a new volume — a directory of that
// node, pinned to it by node affinity — and when the claim goes, the
// volume is released (Retain) or deleted (Delete).
type LocalPathController struct {
	cfg   Config
	in    *Informers
	rec   EventRecorder
	queue *Queue
}

func newLocalPathController(cfg Config, in *Informers) *LocalPathController {
	c := &LocalPathController{cfg: cfg, in: in, rec: cfg.recorder("persistentvolume-controller"), queue: NewQueue(cfg.Clock)}
	in.PersistentVolumeClaims.AddHandler(func(old, cur api.Object) {
		switch {
		case cur != nil:
			c.queue.Add(KeyOf(cur))
		case old != nil:
			// The claim is gone: its volume is reclaimed.
			if v := old.(*api.PersistentVolumeClaim).Spec.VolumeName; v != "" {
				c.queue.Add("\x00pv/" + v)
			}
		}
	})
	in.Pods.AddHandler(func(old, cur api.Object) {
		if cur == nil {
			// A pod is gone: volumes of deleted claims it kept may go now.
			c.queueReleased(old)
			return
		}
		p := cur.(*api.Pod)
		if p.Spec.NodeName == "" {
			return
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				c.queue.Add(p.Namespace + "/" + v.PersistentVolumeClaim.ClaimName)
			}
		}
	})
	return c
}

// queueReleased queues the volumes of the claims pod mounted whose claims
// are gone.
func (c *LocalPathController) queueReleased(pod api.Object) {
	p, ok := pod.(*api.Pod)
	if !ok {
		return
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if c.in.PersistentVolumeClaims.Get(p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName) != nil {
			continue
		}
		for _, o := range c.in.PersistentVolumes.List() {
			if ref := o.(*api.PersistentVolume).Spec.ClaimRef; ref != nil && ref.Namespace == p.Namespace && ref.Name == v.PersistentVolumeClaim.ClaimName {
				c.queue.Add("\x00pv/" + o.GetObjectMeta().Name)
			}
		}
	}
}

func (c *LocalPathController) worker() *worker {
	return &worker{name: "local-path", queue: c.queue, sync: c.sync}
}

// classOf returns the StorageClass of claim: its own, or the default.
func (c *LocalPathController) classOf(claim *api.PersistentVolumeClaim) *api.StorageClass {
	if n := claim.Spec.StorageClassName; n != nil {
		if o := c.in.StorageClasses.Get(*n); o != nil {
			return o.(*api.StorageClass)
		}
		return nil
	}
	for _, o := range c.in.StorageClasses.List() {
		if o.GetObjectMeta().Annotations[api.AnnotationDefaultStorageClass] == "true" {
			return o.(*api.StorageClass)
		}
	}
	return nil
}

// consumerNode returns the node of a scheduled pod that uses claim.
func (c *LocalPathController) consumerNode(claim *api.PersistentVolumeClaim) string {
	for _, o := range c.in.Pods.List() {
		p := o.(*api.Pod)
		if p.Namespace != claim.Namespace || p.Spec.NodeName == "" || !active(p) {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name {
				return p.Spec.NodeName
			}
		}
	}
	return ""
}

func (c *LocalPathController) sync(ctx context.Context, key string) (time.Duration, error) {
	if name, ok := strings.CutPrefix(key, "\x00pv/"); ok {
		return c.reclaim(ctx, name)
	}
	obj := c.in.PersistentVolumeClaims.Get(key)
	if obj == nil {
		return 0, nil
	}
	claim := obj.(*api.PersistentVolumeClaim)
	if claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil {
		return 0, nil
	}
	sc := c.classOf(claim)
	if sc == nil || sc.Provisioner != api.LocalPathProvisioner {
		return 0, nil // not ours
	}
	node := c.consumerNode(claim)
	if node == "" {
		return 0, nil // WaitForFirstConsumer: a scheduled pod queues it again
	}
	now := c.cfg.Clock.Now()
	pvName := "pvc-" + claim.UID
	size := claim.Spec.Resources.Requests[api.ResourceStorage]
	reclaim := api.ReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	dirType := localPathDirectoryOrMake
	pv := &api.PersistentVolume{
		ObjectMeta: api.ObjectMeta{Name: pvName, Annotations: map[string]string{annotationProvisionedBy: api.LocalPathProvisioner}},
		Spec: api.PersistentVolumeSpec{
			Capacity:                      api.ResourceList{api.ResourceStorage: size},
			HostPath:                      &api.HostPathVolumeSource{Path: path.Join(DefaultVolumesDir, api.LocalPathDir(pvName, claim.Namespace, claim.Name)), Type: &dirType},
			AccessModes:                   claim.Spec.AccessModes,
			ClaimRef:                      &api.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              sc.Name,
			NodeAffinity: &api.VolumeNodeAffinity{Required: &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{
				MatchExpressions: []api.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{node}}}}}}},
		},
		Status: api.PersistentVolumeStatus{Phase: api.VolumeBound},
	}
	prepare(pv, now)
	if err := c.cfg.Store.Create(ctx, pv); err != nil && !errors.Is(err, storage.ErrExists) {
		return 0, fmt.Errorf("provision volume for claim %s: %w", key, err)
	}
	c.in.PersistentVolumes.Assume(pv)
	eventf(ctx, c.rec, claim, api.EventTypeNormal, reasonProvisioningDone, "Successfully provisioned volume %s on node %s", pvName, node)
	cp := *claim
	cp.Spec.VolumeName = pvName
	cp.Annotations = maps.Clone(claim.Annotations)
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	cp.Annotations[annotationBindCompleted] = "yes"
	cp.Annotations[annotationSelectedNode] = node
	cp.Annotations[annotationStorageProvis] = api.LocalPathProvisioner
	if cp.Spec.StorageClassName == nil {
		n := sc.Name
		cp.Spec.StorageClassName = &n
	}
	cp.Status = api.PersistentVolumeClaimStatus{Phase: api.ClaimBound, AccessModes: claim.Spec.AccessModes, Capacity: api.ResourceList{api.ResourceStorage: size}}
	if err := c.cfg.Store.Update(ctx, &cp); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("bind claim %s to %s: %w", key, pvName, err)
	}
	c.in.PersistentVolumeClaims.Assume(&cp)
	return 0, nil
}

// reclaimRecheck is how often a volume whose claim is gone but whose
// pods still run is looked at again.
const reclaimRecheck = 10 * time.Second

// reclaim handles a volume whose claim is gone: Retain leaves it
// Released (its directory stays on the node); Delete deletes it, and the
// node's agent removes the directory when it sees the volume gone. While
// a pod still mounts the claim nothing happens (Kubernetes' claim
// protection): the data stays until the last pod has stopped.
func (c *LocalPathController) reclaim(ctx context.Context, name string) (time.Duration, error) {
	o := c.in.PersistentVolumes.Get(name)
	if o == nil {
		return 0, nil
	}
	pv := o.(*api.PersistentVolume)
	if ref := pv.Spec.ClaimRef; ref != nil {
		if cur := c.in.PersistentVolumeClaims.Get(ref.Namespace + "/" + ref.Name); cur != nil && cur.GetObjectMeta().UID == ref.UID {
			return 0, nil // the claim is back (a stale event)
		}
		if c.claimInUse(ref.Namespace, ref.Name) {
			return reclaimRecheck, nil
		}
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == api.ReclaimDelete {
		out, err := c.cfg.Store.Delete(ctx, "persistentvolumes", "", name, pv.ResourceVersion)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return 0, nil
			}
			return 0, fmt.Errorf("delete volume %s: %w", name, err)
		}
		c.in.PersistentVolumes.AssumeDeleted(pv, revisionOf(out))
		return 0, nil
	}
	if pv.Status.Phase == api.VolumeReleased {
		return 0, nil
	}
	cp := *pv
	cp.Status = api.PersistentVolumeStatus{Phase: api.VolumeReleased}
	if err := c.cfg.Store.Update(ctx, &cp); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return 0, fmt.Errorf("release volume %s: %w", name, err)
	}
	c.in.PersistentVolumes.Assume(&cp)
	return 0, nil
}

// claimInUse reports whether a pod that has not finished mounts claim
// ns/name (pods being deleted count until they are gone).
func (c *LocalPathController) claimInUse(ns, name string) bool {
	for _, o := range c.in.Pods.List() {
		p := o.(*api.Pod)
		if p.Namespace != ns || finished(p) {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
				return true
			}
		}
	}
	return false
}

// prepare fills what the API server fills on create.
func prepare(obj api.Object, now time.Time) {
	m := obj.GetObjectMeta()
	m.UID = uid.New()
	m.CreationTimestamp = api.NewTime(now)
	m.Generation = 1
	api.SetTypeMeta(obj)
	api.SetDefaults(obj)
}
