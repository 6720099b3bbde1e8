package controllers

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/storage"
)

func statefulSet(name string, replicas int32, image string, parallel bool) *api.StatefulSet {
	t := podTemplate(name, image)
	t.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "data", MountPath: "/data"}}
	s := &api.StatefulSet{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec: api.StatefulSetSpec{
			Replicas: &replicas, ServiceName: name,
			Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: t,
			VolumeClaimTemplates: []api.PersistentVolumeClaim{{ObjectMeta: api.ObjectMeta{Name: "data"},
				Spec: api.PersistentVolumeClaimSpec{AccessModes: []string{api.AccessReadWriteOnce},
					Resources: api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: resource.MustParse("1Gi")}}}}},
		},
	}
	if parallel {
		s.Spec.PodManagementPolicy = api.ParallelPodManagement
	}
	return s
}

func (h *harness) localPathClass() {
	wffc := api.VolumeBindingWaitForFirstConsumer
	h.create(&api.StorageClass{ObjectMeta: api.ObjectMeta{Name: "local-path", Annotations: map[string]string{api.AnnotationDefaultStorageClass: "true"}},
		Provisioner: api.LocalPathProvisioner, VolumeBindingMode: &wffc})
}

// podNames returns the names of the active pods, sorted.
func (h *harness) podNames() []string {
	var out []string
	for _, p := range h.pods() {
		if active(p) {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// TestStatefulSetOrderedReady: pods come up one at a time in ordinal
// order, each after the one before is ready, with stable names, claims
// and hostnames; scale-down removes the highest ordinal first, one at a
// time.
func TestStatefulSetOrderedReady(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	h.localPathClass()
	h.create(statefulSet("db", 3, "postgres:16", false))
	h.settle()
	if got := h.podNames(); !slices.Equal(got, []string{"db-0"}) {
		t.Fatalf("pods before db-0 is ready = %v; want only db-0", got)
	}
	h.cycle(nodes3...) // db-0 bound and ready → db-1
	if got := h.podNames(); !slices.Equal(got, []string{"db-0", "db-1"}) {
		t.Fatalf("pods after db-0 is ready = %v; want db-0, db-1", got)
	}
	h.cycle(nodes3...)
	h.cycle(nodes3...)
	if got := h.podNames(); !slices.Equal(got, []string{"db-0", "db-1", "db-2"}) {
		t.Fatalf("pods = %v; want db-0..2", got)
	}
	p := h.get("pods", "default", "db-1").(*api.Pod)
	var claim string
	for _, v := range p.Spec.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
	}
	if claim != "data-db-1" || p.Spec.Hostname != "db-1" || p.Spec.Subdomain != "db" || p.Labels[LabelPodIndex] != "1" {
		t.Errorf("db-1: claim %q hostname %q subdomain %q labels %v", claim, p.Spec.Hostname, p.Spec.Subdomain, p.Labels)
	}
	// Each claim is bound to a local-path volume on its pod's node.
	for i := range 3 {
		c := h.get("persistentvolumeclaims", "default", fmt.Sprintf("data-db-%d", i)).(*api.PersistentVolumeClaim)
		pod := h.get("pods", "default", fmt.Sprintf("db-%d", i)).(*api.Pod)
		if c.Status.Phase != api.ClaimBound || c.Spec.VolumeName == "" {
			t.Fatalf("claim %s = %s, volume %q; want Bound", c.Name, c.Status.Phase, c.Spec.VolumeName)
		}
		pv := h.get("persistentvolumes", "", c.Spec.VolumeName).(*api.PersistentVolume)
		if volumeNode(pv) != pod.Spec.NodeName || pv.Spec.PersistentVolumeReclaimPolicy != api.ReclaimDelete || pv.Spec.ClaimRef.UID != c.UID {
			t.Errorf("volume %s: node %q (pod on %q), reclaim %s, claimRef %+v", pv.Name, volumeNode(pv), pod.Spec.NodeName, pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.ClaimRef)
		}
	}
	st := h.get("statefulsets", "default", "db").(*api.StatefulSet).Status
	if st.Replicas != 3 || st.ReadyReplicas != 3 || st.UpdatedReplicas != 3 || st.CurrentRevision != st.UpdateRevision {
		t.Errorf("status = %+v; want 3 ready and updated", st)
	}

	// A deleted pod comes back under its name, pinned to its volume's node.
	node := h.get("pods", "default", "db-1").(*api.Pod).Spec.NodeName
	h.remove("pods", "default", "db-1")
	h.settle()
	back := h.get("pods", "default", "db-1").(*api.Pod)
	aff := back.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
		aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != node {
		t.Errorf("recreated db-1 affinity = %+v; want pinned to %s", aff, node)
	}
	h.cycle(nodes3...)

	// Scale down to 1: db-2 goes first, then db-1.
	h.edit("statefulsets", "default", "db", func(o api.Object) { one := int32(1); o.(*api.StatefulSet).Spec.Replicas = &one })
	h.settle()
	if s := h.terminating(); !slices.Equal(s, []string{"db-2"}) {
		t.Fatalf("terminating after scale to 1 = %v; want db-2 only", s)
	}
	h.cycle(nodes3...) // agents confirm db-2
	if s := h.terminating(); !slices.Equal(s, []string{"db-1"}) {
		t.Fatalf("terminating next = %v; want db-1", s)
	}
	h.cycle(nodes3...)
	if got := h.podNames(); !slices.Equal(got, []string{"db-0"}) {
		t.Fatalf("pods after scale-down = %v; want db-0", got)
	}
	// Claims are kept (retention Retain).
	if _, err := h.store.Get(h.ctx, "persistentvolumeclaims", "default", "data-db-2"); err != nil {
		t.Errorf("claim data-db-2 after scale-down: %v; want kept", err)
	}
}

func (h *harness) terminating() []string {
	var out []string
	for _, p := range h.pods() {
		if p.DeletionTimestamp != nil {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

// TestStatefulSetParallelAndPartition: Parallel starts every pod at
// once; a rolling update with partition 1 replaces only ordinals ≥ 1,
// highest first.
func TestStatefulSetParallelAndPartition(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	h.localPathClass()
	s := statefulSet("web", 3, "nginx:1", true)
	h.create(s)
	h.settle()
	if got := h.podNames(); len(got) != 3 {
		t.Fatalf("parallel pods = %v; want all 3 at once", got)
	}
	h.cycle(nodes3...)
	h.edit("statefulsets", "default", "web", func(o api.Object) {
		ss := o.(*api.StatefulSet)
		ss.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		one := int32(1)
		ss.Spec.UpdateStrategy.RollingUpdate.Partition = &one
	})
	h.settle()
	if got := h.terminating(); !slices.Equal(got, []string{"web-2"}) {
		t.Fatalf("first to go in the update = %v; want web-2", got)
	}
	for range 6 {
		h.cycle(nodes3...)
	}
	images := map[string]string{}
	for _, p := range h.pods() {
		images[p.Name] = p.Spec.Containers[0].Image
	}
	if images["web-0"] != "nginx:1" || images["web-1"] != "nginx:2" || images["web-2"] != "nginx:2" {
		t.Errorf("images after the partitioned update = %v; want web-0 old, web-1 and web-2 new", images)
	}
	// web-0, below the partition, comes back with the current (old)
	// revision's template.
	h.remove("pods", "default", "web-0")
	h.settle()
	if p := h.get("pods", "default", "web-0").(*api.Pod); p.Spec.Containers[0].Image != "nginx:1" {
		t.Errorf("recreated web-0 runs %s; want nginx:1 (below the partition)", p.Spec.Containers[0].Image)
	}
}

// TestLocalPathReclaim: deleting a claim deletes its volume (Delete) or
// leaves it Released (Retain).
func TestLocalPathReclaim(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	h.localPathClass()
	retain := api.ReclaimRetain
	wffc := api.VolumeBindingWaitForFirstConsumer
	h.create(&api.StorageClass{ObjectMeta: api.ObjectMeta{Name: "keep"}, Provisioner: api.LocalPathProvisioner, ReclaimPolicy: &retain, VolumeBindingMode: &wffc})
	keep := "keep"
	for _, c := range []struct {
		name  string
		class *string
	}{{"scratch", nil}, {"precious", &keep}} {
		h.create(&api.PersistentVolumeClaim{ObjectMeta: api.ObjectMeta{Name: c.name, Namespace: "default"},
			Spec: api.PersistentVolumeClaimSpec{AccessModes: []string{api.AccessReadWriteOnce}, StorageClassName: c.class,
				Resources: api.VolumeResourceRequirements{Requests: api.ResourceList{api.ResourceStorage: resource.MustParse("1Gi")}}}})
		h.settle()
		if got := h.get("persistentvolumeclaims", "default", c.name).(*api.PersistentVolumeClaim); got.Status.Phase != api.ClaimPending {
			t.Fatalf("claim %s without a consumer = %s; want Pending (WaitForFirstConsumer)", c.name, got.Status.Phase)
		}
		p := barePod("use-"+c.name, "n1")
		p.Spec.Volumes = []api.Volume{{Name: "v", VolumeSource: api.VolumeSource{PersistentVolumeClaim: &api.PersistentVolumeClaimVolumeSource{ClaimName: c.name}}}}
		h.create(p)
		h.settle()
	}
	pvOf := func(claim string) string {
		return h.get("persistentvolumeclaims", "default", claim).(*api.PersistentVolumeClaim).Spec.VolumeName
	}
	scratch, precious := pvOf("scratch"), pvOf("precious")
	if scratch == "" || precious == "" {
		t.Fatalf("volumes = %q, %q; want both bound", scratch, precious)
	}
	h.remove("persistentvolumeclaims", "default", "scratch")
	h.remove("persistentvolumeclaims", "default", "precious")
	h.settle()
	// The pods still mount the claims: the volumes stay.
	if _, err := h.store.Get(h.ctx, "persistentvolumes", "", scratch); err != nil {
		t.Fatalf("volume of a deleted claim still mounted by a pod: %v; want it kept", err)
	}
	h.remove("pods", "default", "use-scratch")
	h.remove("pods", "default", "use-precious")
	h.settle() // the pods' deletion queues the volumes at once
	if _, err := h.store.Get(h.ctx, "persistentvolumes", "", scratch); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("volume of the deleted Delete claim: %v; want it deleted", err)
	}
	if pv := h.get("persistentvolumes", "", precious).(*api.PersistentVolume); pv.Status.Phase != api.VolumeReleased {
		t.Errorf("volume of the deleted Retain claim = %s; want Released", pv.Status.Phase)
	}
}
