package controllers

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/deepcopy"
	"github.com/skiffhq/skiff/internal/uid"
	"github.com/skiffhq/skiff/storage"
)

// Labels and annotations the controllers put on pods and workloads, as
// Kubernetes names them.
const (
	// LabelPodTemplateHash marks a Deployment's pods with the hash of the
	// template they were made from (the revision they belong to).
	LabelPodTemplateHash = "pod-template-hash"
	// LabelControllerRevisionHash marks a DaemonSet's pods likewise.
	LabelControllerRevisionHash = "controller-revision-hash"
	// AnnotationRevision numbers a Deployment's template revisions: on the
	// Deployment (its current revision) and on each pod (its own).
	AnnotationRevision = "deployment.kubernetes.io/revision"
)

// Index names of the pod informer.
const (
	indexByOwner = "owner" // controlling owner's UID
	indexByNode  = "node"  // spec.nodeName
)

func podsByOwner(obj api.Object) []string {
	if ref := controllerRef(obj.GetObjectMeta()); ref != nil {
		return []string{ref.UID}
	}
	return nil
}

func podsByNode(obj api.Object) []string {
	if n := obj.(*api.Pod).Spec.NodeName; n != "" {
		return []string{n}
	}
	return nil
}

// controllerRef returns m's controlling owner reference, or nil.
func controllerRef(m *api.ObjectMeta) *api.OwnerReference {
	for i := range m.OwnerReferences {
		if r := &m.OwnerReferences[i]; r.Controller != nil && *r.Controller {
			return r
		}
	}
	return nil
}

func finished(p *api.Pod) bool {
	return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
}

// active reports whether p counts towards its controller's replicas: not
// being deleted and not finished.
func active(p *api.Pod) bool { return p.DeletionTimestamp == nil && !finished(p) }

// podReady returns whether p's Ready condition is True, and since when.
func podReady(p *api.Pod) (bool, time.Time) {
	for _, c := range p.Status.Conditions {
		if c.Type == api.PodReady {
			return c.Status == api.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// podAvailable reports whether p has been ready for minReady at now, and
// if it is ready but not yet available, how long until it is.
func podAvailable(p *api.Pod, minReady time.Duration, now time.Time) (bool, time.Duration) {
	ready, since := podReady(p)
	if !ready || p.DeletionTimestamp != nil {
		return false, 0
	}
	if minReady <= 0 {
		return true, 0
	}
	if left := since.Add(minReady).Sub(now); left > 0 {
		return false, left
	}
	return true, 0
}

// rankForDeletion orders pods so that the ones to delete first come first,
// as Kubernetes' ActivePods ordering: unscheduled before scheduled,
// pending before running, not ready before ready, newer before older;
// ties by name so the choice is reproducible.
func rankForDeletion(pods []*api.Pod) {
	phaseRank := func(p *api.Pod) int {
		switch p.Status.Phase {
		case api.PodPending:
			return 0
		case api.PodUnknown:
			return 1
		}
		return 2
	}
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	slices.SortFunc(pods, func(a, b *api.Pod) int {
		if c := cmp.Compare(b2i(a.Spec.NodeName != ""), b2i(b.Spec.NodeName != "")); c != 0 {
			return c
		}
		if c := cmp.Compare(phaseRank(a), phaseRank(b)); c != 0 {
			return c
		}
		ra, _ := podReady(a)
		rb, _ := podReady(b)
		if c := cmp.Compare(b2i(ra), b2i(rb)); c != 0 {
			return c
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// templateHash hashes a pod template (and the collision count, when set)
// into a short label-safe string, as Kubernetes' pod-template-hash.
func templateHash(t *api.PodTemplateSpec, collisions *int32) string {
	h := fnv.New32a()
	b, _ := json.Marshal(t) // plain data: cannot fail
	h.Write(b)
	if collisions != nil {
		fmt.Fprintf(h, "/%d", *collisions)
	}
	return safeEncode(fmt.Sprint(h.Sum32()))
}

// safeEncode maps the digits of s onto an alphabet without vowels, so a
// hash never spells a word (Kubernetes' rand.SafeEncodeString).
func safeEncode(s string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := []byte(s)
	for i, c := range out {
		out[i] = alphabet[int(c)%len(alphabet)]
	}
	return string(out)
}

// randomSuffix returns five characters of the same alphabet.
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b [5]byte
	rand.Read(b[:])
	for i, c := range b {
		b[i] = alphabet[int(c)%len(alphabet)]
	}
	return string(b[:])
}

// copyTemplate deep-copies t.
func copyTemplate(t *api.PodTemplateSpec) api.PodTemplateSpec {
	return *deepcopy.Of(t)
}

// owner describes the controller that makes a pod.
type owner struct {
	kind       string // DaemonSet, ReplicaSet, Job
	apiVersion string // "" is apps/v1
	meta       *api.ObjectMeta
}

// ref returns the controlling owner reference to o.
func (o owner) ref() api.OwnerReference {
	yes := true
	av := o.apiVersion
	if av == "" {
		av = "apps/v1"
	}
	return api.OwnerReference{APIVersion: av, Kind: o.kind, Name: o.meta.Name, UID: o.meta.UID, Controller: &yes, BlockOwnerDeletion: &yes}
}

// newPod builds a pod from template t for o: named prefix plus a random
// suffix, labelled with extra, owned by o, bound to node when set. The
// template is deep-copied. The result is defaulted and validated.
func newPod(t *api.PodTemplateSpec, o owner, prefix string, extra, annotations map[string]string, node string, now time.Time) (*api.Pod, error) {
	tc := copyTemplate(t)
	p := &api.Pod{Spec: tc.Spec}
	p.Labels = tc.Labels
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	for k, v := range extra {
		p.Labels[k] = v
	}
	p.Annotations = tc.Annotations
	for k, v := range annotations {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
	p.Namespace = o.meta.Namespace
	p.Name = prefix + randomSuffix()
	p.UID = uid.New()
	p.CreationTimestamp = api.NewTime(now)
	p.Generation = 1
	p.OwnerReferences = []api.OwnerReference{o.ref()}
	if node != "" {
		p.Spec.NodeName = node
	}
	p.Status = api.PodStatus{Phase: api.PodPending}
	api.SetTypeMeta(p)
	api.SetDefaults(p)
	if errs := api.Validate(p); len(errs) > 0 {
		return nil, fmt.Errorf("pod for %s %s/%s is invalid: %w", o.kind, o.meta.Namespace, o.meta.Name, errs)
	}
	return p, nil
}

// podWriter makes the pod writes every controller shares, through the
// store, and puts their results into the pod informer.
type podWriter struct {
	store *storage.Store
	pods  *Informer
	bulk  func(n int) // Config.Bulk; nil: nobody is told
}

// maxCreateBatch bounds a slow-start batch of pod creates. A batch is one
// Store.CreateBatch from the controller's goroutine, so it costs one wait
// for the store's writer, not a goroutine and a wait per pod: on a server
// whose cores are busy with a fleet's traffic, each of those waits is a
// turn behind every other runnable goroutine.
const maxCreateBatch = 1024

// createAll creates n pods, the i-th built by build(i), in batches of 1,
// 2, 4, … (at most maxCreateBatch), stopping after the first batch with
// an error, as Kubernetes' slowStartBatch: a failing request (quota,
// invalid template) fails once rather than n times. A name already taken
// is tried again with another random suffix (five tries in all). made[i]
// is the i-th pod if it was created, else nil; created pods are put into
// the pod informer. Config.Bulk hears of the n creates before the first.
func (w podWriter) createAll(ctx context.Context, n int, build func(i int) (*api.Pod, error)) (made []*api.Pod, err error) {
	if w.bulk != nil {
		w.bulk(n)
	}
	made = make([]*api.Pod, n)
	done := 0
	for size := 1; done < n; size = min(2*size, maxCreateBatch) {
		batch := min(size, n-done)
		var errs []error
		var pods []*api.Pod
		var at []int
		for i := done; i < done+batch; i++ {
			p, err := build(i)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			pods, at = append(pods, p), append(at, i)
		}
		for try := 1; len(pods) > 0; try++ {
			objs := make([]api.Object, len(pods))
			for k, p := range pods {
				objs[k] = p
			}
			var again []*api.Pod
			var againAt []int
			for k, err := range w.store.CreateBatch(ctx, objs) {
				p := pods[k]
				switch {
				case err == nil:
					w.pods.Assume(p)
					made[at[k]] = p
				case errors.Is(err, storage.ErrExists) && try < 5:
					p.Name = p.Name[:len(p.Name)-5] + randomSuffix()
					again, againAt = append(again, p), append(againAt, at[k])
				default:
					errs = append(errs, err)
				}
			}
			pods, at = again, againAt
		}
		done += batch
		if err := errors.Join(errs...); err != nil {
			return made, err
		}
	}
	return made, nil
}

// createdCount is how many of made are set.
func createdCount(made []*api.Pod) int {
	n := 0
	for _, p := range made {
		if p != nil {
			n++
		}
	}
	return n
}

// delete deletes p as a graceful API delete does: a pod running on a node
// is marked (deletionTimestamp, grace period) so that its agent stops it
// and then removes it; an unbound or finished pod is removed at once. The
// write is conditional on p's resourceVersion. A pod already gone is not
// an error.
func (w podWriter) delete(ctx context.Context, p *api.Pod, now time.Time) error {
	if p.Spec.NodeName == "" || finished(p) {
		return w.remove(ctx, p)
	}
	if p.DeletionTimestamp != nil {
		return nil
	}
	c := *p
	g := int64(30)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		g = *p.Spec.TerminationGracePeriodSeconds
	}
	c.DeletionTimestamp = api.NewTimePtr(now)
	c.DeletionGracePeriodSeconds = &g
	if err := w.store.Update(ctx, &c); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	}
	w.pods.Assume(&c)
	return nil
}

// remove deletes p from the store at once (conditional on its
// resourceVersion).
func (w podWriter) remove(ctx context.Context, p *api.Pod) error {
	out, err := w.store.Delete(ctx, "pods", p.Namespace, p.Name, p.ResourceVersion)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return err
	}
	w.pods.AssumeDeleted(p, revisionOf(out))
	return nil
}

// update stores p (a modified copy of a cached pod, its resourceVersion
// the precondition).
func (w podWriter) update(ctx context.Context, p *api.Pod) error {
	if err := w.store.Update(ctx, p); err != nil {
		return err
	}
	w.pods.Assume(p)
	return nil
}

// slowStart runs fn for n items in batches of 1, 2, 4, … (at most
// maxBatch), the items of a batch concurrently so the store commits them
// together, stopping after the first batch with an error, as Kubernetes'
// slowStartBatch: a failing request (quota, invalid template) fails once
// rather than n times. It returns how many succeeded and the errors.
func slowStart(n int, fn func(i int) error) (int, error) {
	const maxBatch = 256
	done := 0
	for size := 1; done < n; size = min(2*size, maxBatch) {
		batch := min(size, n-done)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for j := range batch {
			wg.Go(func() { errs[j] = fn(done + j) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			}
		}
		done += batch
		if err := errors.Join(errs...); err != nil {
			return done - batch + ok, err
		}
	}
	return done, nil
}

// watchOwnerAndPods queues an owner (a DaemonSet, ReplicaSet or Job, of kind)
// when it changes and when any pod it controls changes.
func watchOwnerAndPods(owners, pods *Informer, kind string, q *Queue) {
	owners.AddHandler(func(_, cur api.Object) {
		if cur != nil {
			q.Add(KeyOf(cur))
		}
	})
	pods.AddHandler(func(old, cur api.Object) {
		for _, o := range []api.Object{old, cur} {
			if o == nil {
				continue
			}
			if ref := controllerRef(o.GetObjectMeta()); ref != nil && ref.Kind == kind {
				q.Add(o.GetObjectMeta().Namespace + "/" + ref.Name)
			}
		}
	})
}
