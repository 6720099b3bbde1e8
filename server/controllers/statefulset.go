package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/uid"
	"github.com/skiffhq/skiff/storage"
)

// Labels a StatefulSet's pods carry, as Kubernetes names them.
const (
	LabelStatefulSetPodName = "statefulset.kubernetes.io/pod-name"
	LabelPodIndex           = "apps.kubernetes.io/pod-index"
)

// StatefulSetController runs each StatefulSet's pods under stable names,
// <name>-<ordinal>, each with its own claims (<template>-<name>-<ordinal>),
// created in ordinal order and removed in reverse (OrderedReady: one at a
// time, each waiting for the one before to be Running and Ready; Parallel:
// all at once), and rolls template changes out from the highest ordinal
// down to the partition. A pod whose claim is bound to a volume pinned to
// a node is pinned to that node too (required node affinity), so it comes
// back where its data is.
type StatefulSetController struct {
	cfg   Config
	in    *Informers
	pods  podWriter
	rec   EventRecorder
	queue *Queue
}

func newStatefulSetController(cfg Config, in *Informers, w podWriter) *StatefulSetController {
	c := &StatefulSetController{cfg: cfg, in: in, pods: w, rec: cfg.recorder("statefulset-controller"), queue: NewQueue(cfg.Clock)}
	watchOwnerAndPods(in.StatefulSets, in.Pods, "StatefulSet", c.queue)
	return c
}

func (c *StatefulSetController) worker() *worker {
	return &worker{name: "statefulset", queue: c.queue, sync: c.sync}
}

// ordinalOf returns the ordinal of a pod named <set>-<n>, or -1.
func ordinalOf(set, pod string) int {
	rest, ok := strings.CutPrefix(pod, set+"-")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return -1
	}
	return n
}

// claimName is the claim of template t for the pod of ordinal ord.
func claimName(t *api.PersistentVolumeClaim, s *api.StatefulSet, ord int) string {
	return t.Name + "-" + s.Name + "-" + strconv.Itoa(ord)
}

func setReady(p *api.Pod) bool {
	r, _ := podReady(p)
	return r && p.Status.Phase == api.PodRunning && p.DeletionTimestamp == nil
}

func (c *StatefulSetController) sync(ctx context.Context, key string) (time.Duration, error) {
	obj := c.in.StatefulSets.Get(key)
	if obj == nil {
		return 0, nil
	}
	s := obj.(*api.StatefulSet)
	if s.DeletionTimestamp != nil {
		return 0, nil
	}
	now := c.cfg.Clock.Now()
	replicas := 1
	if s.Spec.Replicas != nil {
		replicas = int(*s.Spec.Replicas)
	}
	start := 0
	if s.Spec.Ordinals != nil {
		start = int(s.Spec.Ordinals.Start)
	}
	revision := s.Name + "-" + templateHash(&s.Spec.Template, s.Status.CollisionCount)
	parallel := s.Spec.PodManagementPolicy == api.ParallelPodManagement
	byOrd := map[int]*api.Pod{}
	var condemned []*api.Pod
	for _, p := range ownedPods(c.in, s.UID) {
		ord := ordinalOf(s.Name, p.Name)
		switch {
		case ord < 0:
			continue
		case ord >= start && ord < start+replicas:
			byOrd[ord] = p
		default:
			condemned = append(condemned, p)
		}
	}
	var errs []error
	// Pods that finished are replaced: delete them first.
	for ord, p := range byOrd {
		if finished(p) && p.DeletionTimestamp == nil {
			errs = append(errs, c.pods.delete(ctx, p, now))
			delete(byOrd, ord)
		}
	}
	// Create in ordinal order.
	for ord := start; ord < start+replicas; ord++ {
		p := byOrd[ord]
		if p == nil {
			rev, tmpl := c.templateFor(s, ord, revision)
			np, err := c.createPod(ctx, s, ord, rev, tmpl, now)
			if err != nil {
				errs = append(errs, err)
				break
			}
			byOrd[ord] = np
			if !parallel {
				break // wait for it to be Running and Ready
			}
			continue
		}
		if !parallel && !setReady(p) {
			break
		}
	}
	allReady := true
	for ord := start; ord < start+replicas; ord++ {
		if p := byOrd[ord]; p == nil || !setReady(p) {
			allReady = false
		}
	}
	// Scale down from the highest ordinal.
	slices.SortFunc(condemned, func(a, b *api.Pod) int { return ordinalOf(s.Name, b.Name) - ordinalOf(s.Name, a.Name) })
	for _, p := range condemned {
		if p.DeletionTimestamp != nil {
			if !parallel {
				break // one at a time: wait until it is gone
			}
			continue
		}
		if !parallel && !allReady {
			break
		}
		errs = append(errs, c.pods.delete(ctx, p, now))
		eventf(ctx, c.rec, s, api.EventTypeNormal, reasonSuccessfulDelete, "delete Pod %s in StatefulSet %s successful", p.Name, s.Name)
		if !parallel {
			break
		}
	}
	// Roll template changes out, highest ordinal first, down to the
	// partition, one pod at a time once every pod is ready.
	if s.Spec.UpdateStrategy.Type == api.RollingUpdateStatefulSet && allReady && len(condemned) == 0 {
		partition := 0
		if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
			partition = int(*ru.Partition)
		}
		for ord := start + replicas - 1; ord >= max(start, partition); ord-- {
			if p := byOrd[ord]; p != nil && p.Labels[LabelControllerRevisionHash] != revision {
				errs = append(errs, c.pods.delete(ctx, p, now))
				break
			}
		}
	}
	errs = append(errs, c.writeStatus(ctx, s, byOrd, revision, now))
	return 0, errors.Join(errs...)
}

// createPod creates the claims and the pod of ordinal ord.
func (c *StatefulSetController) createPod(ctx context.Context, s *api.StatefulSet, ord int, revision string, tmpl *api.PodTemplateSpec, now time.Time) (*api.Pod, error) {
	name := s.Name + "-" + strconv.Itoa(ord)
	var pinned string
	vols := map[string]string{} // template name → claim
	for i := range s.Spec.VolumeClaimTemplates {
		t := &s.Spec.VolumeClaimTemplates[i]
		cn := claimName(t, s, ord)
		vols[t.Name] = cn
		node, err := c.ensureClaim(ctx, s, t, cn, now)
		if err != nil {
			return nil, err
		}
		if node != "" {
			pinned = node
		}
	}
	t := copyTemplate(tmpl)
	for tn, cn := range vols {
		found := false
		for i := range t.Spec.Volumes {
			if t.Spec.Volumes[i].Name == tn {
				t.Spec.Volumes[i].VolumeSource = api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: cn}}
				found = true
			}
		}
		if !found {
			t.Spec.Volumes = append(t.Spec.Volumes, api.Volume{Name: tn, VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: cn}}})
		}
	}
	t.Spec.Hostname = name
	if s.Spec.ServiceName != "" {
		t.Spec.Subdomain = s.Spec.ServiceName
	}
	extra := map[string]string{LabelControllerRevisionHash: revision, LabelStatefulSetPodName: name, LabelPodIndex: strconv.Itoa(ord)}
	p, err := newPod(&t, owner{kind: "StatefulSet", meta: &s.ObjectMeta}, name, extra, nil, "", now)
	if err != nil {
		return nil, err
	}
	p.Name = name
	slices.SortFunc(p.Spec.Volumes, func(a, b api.Volume) int { return strings.Compare(a.Name, b.Name) })
	if pinned != "" {
		pinToNode(p, pinned)
	}
	if err := c.cfg.Store.Create(ctx, p); err != nil {
		if errors.Is(err, storage.ErrExists) {
			return nil, nil
		}
		eventf(ctx, c.rec, s, api.EventTypeWarning, reasonFailedCreate, "create Pod %s in StatefulSet %s failed error: %v", name, s.Name, err)
		return nil, fmt.Errorf("create pod %s/%s: %w", s.Namespace, name, err)
	}
	c.pods.pods.Assume(p)
	eventf(ctx, c.rec, s, api.EventTypeNormal, reasonSuccessfulCreate, "create Pod %s in StatefulSet %s successful", name, s.Name)
	return p, nil
}

// annotationCurrentTemplate keeps, on a StatefulSet, the pod template of
// its current revision (status.currentRevision) while a partitioned
// rolling update runs: pods below the partition are recreated from it,
// as Kubernetes recreates them from the current ControllerRevision.
const annotationCurrentTemplate = "skiff.io/current-revision-template"

// templateFor returns the revision and template the pod of ordinal ord is
// made from: the update revision's, or below the partition of a rolling
// update that has not finished, the current revision's.
func (c *StatefulSetController) templateFor(s *api.StatefulSet, ord int, update string) (string, *api.PodTemplateSpec) {
	cur := s.Status.CurrentRevision
	ru := s.Spec.UpdateStrategy.RollingUpdate
	if cur == "" || cur == update || ru == nil || ru.Partition == nil || ord >= int(*ru.Partition) {
		return update, &s.Spec.Template
	}
	var t api.PodTemplateSpec
	if raw := s.Annotations[annotationCurrentTemplate]; raw == "" || json.Unmarshal([]byte(raw), &t) != nil {
		return update, &s.Spec.Template
	}
	return cur, &t
}

// rememberTemplate records s's template as its current revision's, once
// that revision is the current one.
func (c *StatefulSetController) rememberTemplate(ctx context.Context, s *api.StatefulSet) error {
	raw, err := json.Marshal(s.Spec.Template)
	if err != nil {
		return fmt.Errorf("encode template of statefulset %s/%s: %w", s.Namespace, s.Name, err)
	}
	if s.Annotations[annotationCurrentTemplate] == string(raw) {
		return nil
	}
	cp := *s
	cp.Annotations = maps.Clone(s.Annotations)
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	cp.Annotations[annotationCurrentTemplate] = string(raw)
	if err := c.cfg.Store.Update(ctx, &cp); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("record template of statefulset %s/%s: %w", s.Namespace, s.Name, err)
	}
	c.in.StatefulSets.Assume(&cp)
	return nil
}

// pinToNode adds a required node affinity for node's hostname label.
func pinToNode(p *api.Pod, node string) {
	term := api.NodeSelectorTerm{MatchExpressions: []api.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: "In", Values: []string{node}}}}
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &api.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &api.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{term}}
		return
	}
	// Terms are ORed: add the requirement to each.
	for i := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		t := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
		t.MatchExpressions = append(t.MatchExpressions, term.MatchExpressions...)
	}
}

// ensureClaim creates claim name from template t when it does not exist
// and returns the node its volume is pinned to, if it is bound to one.
func (c *StatefulSetController) ensureClaim(ctx context.Context, s *api.StatefulSet, t *api.PersistentVolumeClaim, name string, now time.Time) (string, error) {
	if o := c.in.PersistentVolumeClaims.Get(s.Namespace + "/" + name); o != nil {
		return pinnedNode(c.in, o.(*api.PersistentVolumeClaim)), nil
	}
	claim := &api.PersistentVolumeClaim{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: s.Namespace, UID: uid.New(), Generation: 1, CreationTimestamp: api.NewTime(now),
			Labels: maps.Clone(t.Labels), Annotations: maps.Clone(t.Annotations)},
		Spec: t.Spec,
	}
	if claim.Labels == nil {
		claim.Labels = map[string]string{}
	}
	if s.Spec.Selector != nil {
		maps.Copy(claim.Labels, s.Spec.Selector.MatchLabels)
	}
	api.SetTypeMeta(claim)
	api.SetDefaults(claim)
	if errs := api.Validate(claim); len(errs) > 0 {
		return "", fmt.Errorf("claim %s of statefulset %s/%s is invalid: %w", name, s.Namespace, s.Name, errs)
	}
	if err := c.cfg.Store.Create(ctx, claim); err != nil && !errors.Is(err, storage.ErrExists) {
		eventf(ctx, c.rec, s, api.EventTypeWarning, reasonFailedCreate, "create Claim %s for StatefulSet %s failed error: %v", name, s.Name, err)
		return "", fmt.Errorf("create claim %s/%s: %w", s.Namespace, name, err)
	}
	c.in.PersistentVolumeClaims.Assume(claim)
	eventf(ctx, c.rec, s, api.EventTypeNormal, reasonSuccessfulCreate, "create Claim %s for StatefulSet %s successful", name, s.Name)
	return "", nil
}

// pinnedNode returns the node the volume bound to claim is pinned to.
func pinnedNode(in *Informers, claim *api.PersistentVolumeClaim) string {
	if claim.Spec.VolumeName == "" {
		return ""
	}
	o := in.PersistentVolumes.Get(claim.Spec.VolumeName)
	if o == nil {
		return ""
	}
	return volumeNode(o.(*api.PersistentVolume))
}

// volumeNode returns the node a volume's node affinity names (the
// kubernetes.io/hostname In [node] term), or "".
func volumeNode(v *api.PersistentVolume) string {
	na := v.Spec.NodeAffinity
	if na == nil || na.Required == nil {
		return ""
	}
	for _, t := range na.Required.NodeSelectorTerms {
		for _, r := range t.MatchExpressions {
			if r.Key == "kubernetes.io/hostname" && r.Operator == "In" && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

func (c *StatefulSetController) writeStatus(ctx context.Context, s *api.StatefulSet, byOrd map[int]*api.Pod, revision string, now time.Time) error {
	st := s.Status
	st.ObservedGeneration = s.Generation
	st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas, st.CurrentReplicas = 0, 0, 0, 0, 0
	minReady := time.Duration(s.Spec.MinReadySeconds) * time.Second
	for _, p := range byOrd {
		if p.DeletionTimestamp != nil {
			continue
		}
		st.Replicas++
		if setReady(p) {
			st.ReadyReplicas++
		}
		if a, _ := podAvailable(p, minReady, now); a {
			st.AvailableReplicas++
		}
		if p.Labels[LabelControllerRevisionHash] == revision {
			st.UpdatedReplicas++
		}
	}
	st.UpdateRevision = revision
	replicas := int32(1)
	if s.Spec.Replicas != nil {
		replicas = *s.Spec.Replicas
	}
	if st.CurrentRevision == "" || (st.UpdatedReplicas == replicas && st.ReadyReplicas == replicas) {
		st.CurrentRevision = revision
	}
	for _, p := range byOrd {
		if p.DeletionTimestamp == nil && p.Labels[LabelControllerRevisionHash] == st.CurrentRevision {
			st.CurrentReplicas++
		}
	}
	if reflect.DeepEqual(st, s.Status) {
		if st.CurrentRevision == revision {
			return c.rememberTemplate(ctx, s)
		}
		return nil
	}
	cp := *s
	cp.Status = st
	if err := c.cfg.Store.Update(ctx, &cp); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("update status of statefulset %s/%s: %w", s.Namespace, s.Name, err)
	}
	c.in.StatefulSets.Assume(&cp)
	return nil
}
