package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// ownerKinds are the owners the collector knows, by apiVersion/kind.
var ownerKinds = map[string]string{
	"apps/v1/Deployment":  "deployments",
	"apps/v1/DaemonSet":   "daemonsets",
	"apps/v1/ReplicaSet":  "replicasets",
	"batch/v1/Job":        "jobs",
	"batch/v1/CronJob":    "cronjobs",
	"apps/v1/StatefulSet": "statefulsets",
}

// dependentKeyPrefix marks a queue key that names a dependent other than
// a pod: "\x01<resource>\x00<namespace>/<name>".
const dependentKeyPrefix = "\x01"

func dependentKey(resource string, obj api.Object) string {
	return dependentKeyPrefix + resource + "\x00" + KeyOf(obj)
}

// GarbageCollector deletes what nothing should keep: pods whose owners
// are all gone (background propagation: deleting a Deployment or a
// DaemonSet deletes its pods), pods bound to a node that no longer
// exists, finished pods beyond TerminatedPodThreshold (oldest first), and
// whatever the configured Sweeps expire.
type GarbageCollector struct {
	cfg   Config
	in    *Informers
	pods  podWriter
	queue *Queue

	mu          sync.Mutex
	missingNode map[string]time.Time // pod key → when its node was first seen missing

	ownersOnce     sync.Once
	ownerInformers map[string]*Informer // by resource, built once
}

// gcSweepKey is the queue key of the periodic full scan.
const gcSweepKey = "\x00sweep"

func newGarbageCollector(cfg Config, in *Informers, w podWriter) *GarbageCollector {
	c := &GarbageCollector{cfg: cfg, in: in, pods: w, queue: NewQueue(cfg.Clock), missingNode: map[string]time.Time{}}
	ownerGone := func(old, cur api.Object) {
		if cur == nil && old != nil {
			for _, p := range in.Pods.ByIndex(indexByOwner, old.GetObjectMeta().UID) {
				c.queue.Add(KeyOf(p))
			}
		}
	}
	for _, owners := range c.owners() {
		owners.AddHandler(ownerGone)
	}
	for res, deps := range c.dependents() {
		for _, owners := range c.owners() {
			owners.AddHandler(func(old, cur api.Object) {
				if cur == nil && old != nil {
					for _, o := range deps.ByIndex(indexByOwner, old.GetObjectMeta().UID) {
						c.queue.Add(dependentKey(res, o))
					}
				}
			})
		}
	}
	in.Pods.AddHandler(func(_, cur api.Object) {
		if cur != nil && len(cur.GetObjectMeta().OwnerReferences) > 0 {
			c.queue.Add(KeyOf(cur))
		}
	})
	in.Nodes.AddHandler(func(old, cur api.Object) {
		if cur == nil && old != nil {
			for _, p := range in.Pods.ByIndex(indexByNode, old.GetObjectMeta().Name) {
				c.queue.Add(KeyOf(p))
			}
		}
	})
	return c
}

func (c *GarbageCollector) worker() *worker {
	return &worker{name: "garbage-collector", queue: c.queue, sync: c.sync}
}

// sweepLoop queues the full scan every GCInterval.
func (c *GarbageCollector) sweepLoop(ctx context.Context) {
	t := c.cfg.Clock.NewTicker(c.cfg.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			c.queue.Add(gcSweepKey)
		}
	}
}

func (c *GarbageCollector) sync(ctx context.Context, key string) (time.Duration, error) {
	if key == gcSweepKey {
		return 0, c.Sweep(ctx)
	}
	if strings.HasPrefix(key, dependentKeyPrefix) {
		res, k, _ := strings.Cut(key[len(dependentKeyPrefix):], "\x00")
		if inf := c.dependents()[res]; inf != nil {
			if obj := inf.Get(k); obj != nil {
				return 0, c.collectDependent(ctx, res, inf, obj)
			}
		}
		return 0, nil
	}
	obj := c.in.Pods.Get(key)
	if obj == nil {
		c.mu.Lock()
		delete(c.missingNode, key)
		c.mu.Unlock()
		return 0, nil
	}
	return c.collectPod(ctx, obj.(*api.Pod))
}

// ownerExists reports whether the owner ref points at a live object: same
// name and UID, not being deleted. Owners of kinds the collector does not
// know are assumed to exist.
func (c *GarbageCollector) ownerExists(ns string, ref api.OwnerReference) bool {
	inf := c.owners()[ownerKinds[ref.APIVersion+"/"+ref.Kind]]
	if inf == nil {
		return true
	}
	o := inf.Get(ns + "/" + ref.Name)
	return o != nil && o.GetObjectMeta().UID == ref.UID
}

// collectPod deletes p if all its owners are gone, or if its node has
// been gone for the quarantine period. It returns when to look again.
func (c *GarbageCollector) collectPod(ctx context.Context, p *api.Pod) (time.Duration, error) {
	now := c.cfg.Clock.Now()
	if refs := p.OwnerReferences; len(refs) > 0 && p.DeletionTimestamp == nil {
		alive := slices.ContainsFunc(refs, func(r api.OwnerReference) bool { return c.ownerExists(p.Namespace, r) })
		if !alive {
			c.cfg.Logger.Debug("deleting pod of deleted owner", "pod", KeyOf(p))
			if err := c.pods.delete(ctx, p, now); err != nil {
				return 0, fmt.Errorf("delete dependent pod %s: %w", KeyOf(p), err)
			}
			return 0, nil
		}
	}
	if p.Spec.NodeName == "" || c.in.Nodes.Get(p.Spec.NodeName) != nil {
		c.mu.Lock()
		delete(c.missingNode, KeyOf(p))
		c.mu.Unlock()
		return 0, nil
	}
	// Bound to a node that does not exist: after a quarantine (the node
	// may be about to register), remove the pod at once, since no agent
	// will ever confirm its deletion.
	c.mu.Lock()
	since, ok := c.missingNode[KeyOf(p)]
	if !ok {
		since = now
		c.missingNode[KeyOf(p)] = now
	}
	c.mu.Unlock()
	if left := since.Add(DefaultOrphanNodeQuarantine).Sub(now); left > 0 {
		return left, nil
	}
	c.cfg.Logger.Info("deleting pod bound to a deleted node", "pod", KeyOf(p), "node", p.Spec.NodeName)
	if err := c.pods.remove(ctx, p); err != nil {
		return 0, fmt.Errorf("delete pod %s of deleted node %s: %w", KeyOf(p), p.Spec.NodeName, err)
	}
	return 0, nil
}

// owners returns the informers of the kinds that own pods or other
// dependents, by resource.
func (c *GarbageCollector) owners() map[string]*Informer {
	c.ownersOnce.Do(func() { c.ownerInformers = c.buildOwners() })
	return c.ownerInformers
}

func (c *GarbageCollector) buildOwners() map[string]*Informer {
	return map[string]*Informer{"deployments": c.in.Deployments, "daemonsets": c.in.DaemonSets,
		"replicasets": c.in.ReplicaSets, "jobs": c.in.Jobs, "cronjobs": c.in.CronJobs, "statefulsets": c.in.StatefulSets}
}

// dependents returns the informers of the kinds other than pods that
// the collector deletes when their owners are gone, by resource.
func (c *GarbageCollector) dependents() map[string]*Informer {
	return map[string]*Informer{"replicasets": c.in.ReplicaSets, "jobs": c.in.Jobs}
}

// collectDependent deletes obj (of resource, cached in inf) when every
// owner it names is gone (background propagation: its own dependents go
// next, when the collector sees it gone).
func (c *GarbageCollector) collectDependent(ctx context.Context, resource string, inf *Informer, obj api.Object) error {
	m := obj.GetObjectMeta()
	if len(m.OwnerReferences) == 0 || m.DeletionTimestamp != nil {
		return nil
	}
	if slices.ContainsFunc(m.OwnerReferences, func(r api.OwnerReference) bool { return c.ownerExists(m.Namespace, r) }) {
		return nil
	}
	out, err := c.cfg.Store.Delete(ctx, resource, m.Namespace, m.Name, m.ResourceVersion)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("delete dependent %s %s: %w", resource, KeyOf(obj), err)
	}
	inf.AssumeDeleted(obj, revisionOf(out))
	return nil
}

// Sweep runs the full scan: every pod is checked for owners and node,
// finished pods beyond the threshold are deleted oldest first, and the
// configured sweeps run.
func (c *GarbageCollector) Sweep(ctx context.Context) error {
	var errs []error
	var done []*api.Pod
	for _, o := range c.in.Pods.List() {
		p := o.(*api.Pod)
		if _, err := c.collectPod(ctx, p); err != nil {
			errs = append(errs, err)
		}
		if finished(p) && p.DeletionTimestamp == nil {
			done = append(done, p)
		}
	}
	for res, inf := range c.dependents() {
		for _, o := range inf.List() {
			if err := c.collectDependent(ctx, res, inf, o); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := c.trimFinished(ctx, done); err != nil {
		errs = append(errs, err)
	}
	for _, s := range c.cfg.Sweeps {
		n, err := s.Run(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep %s: %w", s.Name, err))
			continue
		}
		if n > 0 {
			c.cfg.Logger.Debug("sweep deleted expired objects", "sweep", s.Name, "count", n)
		}
	}
	return errors.Join(errs...)
}

// terminatedToTrim returns the finished pods to delete so that at most
// threshold remain: the oldest first (by creation, then name).
func terminatedToTrim(done []*api.Pod, threshold int) []*api.Pod {
	if len(done) <= threshold {
		return nil
	}
	s := slices.Clone(done)
	slices.SortFunc(s, func(a, b *api.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return slices.Compare([]byte(KeyOf(a)), []byte(KeyOf(b)))
	})
	return s[:len(s)-threshold]
}

func (c *GarbageCollector) trimFinished(ctx context.Context, done []*api.Pod) error {
	var errs []error
	for _, p := range terminatedToTrim(done, c.cfg.TerminatedPodThreshold) {
		if err := c.pods.remove(ctx, p); err != nil && !errors.Is(err, storage.ErrConflict) {
			errs = append(errs, fmt.Errorf("delete finished pod %s: %w", KeyOf(p), err))
		}
	}
	return errors.Join(errs...)
}
