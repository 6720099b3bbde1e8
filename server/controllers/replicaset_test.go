package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// TestDeploymentReplicaSets: each revision has a ReplicaSet the
// Deployment controls, named <deployment>-<hash>, whose replicas and
// status follow its pods; old empty ones beyond revisionHistoryLimit go,
// oldest first.
func TestDeploymentReplicaSets(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	d := deployment("web", 2, "nginx:1")
	limit := int32(2)
	d.Spec.RevisionHistoryLimit = &limit
	d.Annotations = map[string]string{AnnotationChangeCause: "first"}
	h.create(d)
	h.settle()
	h.cycle(nodes3...)
	rss := h.replicaSets("web")
	if len(rss) != 1 {
		t.Fatalf("%d replica sets; want 1", len(rss))
	}
	rs := rss[0]
	hash := rs.Labels[LabelPodTemplateHash]
	if rs.Name != "web-"+hash || rs.Spec.Selector.MatchLabels[LabelPodTemplateHash] != hash || rs.Spec.Template.Labels[LabelPodTemplateHash] != hash {
		t.Errorf("replica set %s labels %v selector %v; want web-<hash> with the hash in selector and template", rs.Name, rs.Labels, rs.Spec.Selector)
	}
	if *rs.Spec.Replicas != 2 || rs.Status.Replicas != 2 || rs.Status.ReadyReplicas != 2 || rs.Status.AvailableReplicas != 2 {
		t.Errorf("replica set spec.replicas %d status %+v; want 2, all ready and available", *rs.Spec.Replicas, rs.Status)
	}
	if rs.Annotations[AnnotationRevision] != "1" || rs.Annotations[AnnotationChangeCause] != "first" {
		t.Errorf("replica set annotations %v; want revision 1 and the change cause", rs.Annotations)
	}
	for _, p := range h.pods() {
		if ref := controllerRef(&p.ObjectMeta); ref == nil || ref.Kind != "ReplicaSet" || ref.UID != rs.UID {
			t.Errorf("pod %s controller %+v; want the replica set", p.Name, ref)
		}
	}
	// Four more revisions, each rolled out fully: the history keeps the
	// current one and two old ones.
	for i := 2; i <= 5; i++ {
		h.edit("deployments", "default", "web", func(o api.Object) {
			o.(*api.Deployment).Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("nginx:%d", i)
		})
		for range 6 {
			h.cycle(nodes3...)
		}
	}
	rss = h.replicaSets("web")
	revs := map[string]int32{}
	for _, rs := range rss {
		revs[rs.Annotations[AnnotationRevision]] = *rs.Spec.Replicas
	}
	if len(rss) != 3 || revs["5"] != 2 || revs["4"] != 0 || revs["3"] != 0 {
		t.Errorf("replica sets by revision (replicas) = %v; want 5 (2), 4 (0), 3 (0)", revs)
	}
}

// TestDeploymentAdoptsPodsWithoutRestart: pods a Deployment controls
// directly (made before ReplicaSets existed) move under the ReplicaSet
// of their revision; they are the same pods (same UID), not replaced.
func TestDeploymentAdoptsPodsWithoutRestart(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	d := h.create(deployment("web", 2, "nginx:1")).(*api.Deployment)
	hash := templateHash(&d.Spec.Template, nil)
	uids := map[string]bool{}
	for i := range 2 {
		p, err := newPod(&d.Spec.Template, owner{kind: "Deployment", meta: &d.ObjectMeta}, "web-"+hash+"-", map[string]string{LabelPodTemplateHash: hash}, map[string]string{AnnotationRevision: "1"}, nodes3[i], h.clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		h.create(p)
		uids[p.UID] = true
	}
	h.settle()
	rss := h.replicaSets("web")
	if len(rss) != 1 || rss[0].Name != "web-"+hash {
		t.Fatalf("replica sets = %d; want web-%s", len(rss), hash)
	}
	ps := h.pods()
	if len(ps) != 2 {
		t.Fatalf("%d pods after adoption; want the same 2", len(ps))
	}
	for _, p := range ps {
		ref := controllerRef(&p.ObjectMeta)
		if !uids[p.UID] || ref == nil || ref.UID != rss[0].UID {
			t.Errorf("pod %s (uid known %v) controller %+v; want an adopted original pod", p.Name, uids[p.UID], ref)
		}
	}
}

// TestStandaloneReplicaSet: a ReplicaSet no Deployment controls keeps
// its own pods at replicas.
func TestStandaloneReplicaSet(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	three := int32(3)
	rs := h.create(&api.ReplicaSet{
		ObjectMeta: api.ObjectMeta{Name: "frontend", Namespace: "default"},
		Spec: api.ReplicaSetSpec{Replicas: &three, Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}},
			Template: podTemplate("frontend", "nginx:1")},
	}).(*api.ReplicaSet)
	h.settle()
	h.cycle(nodes3...)
	if s := h.statsOf(rs.UID); s.active != 3 || s.ready != 3 {
		t.Fatalf("replica set pods: %d active, %d ready; want 3 and 3", s.active, s.ready)
	}
	if got := h.get("replicasets", "default", "frontend").(*api.ReplicaSet); got.Status.Replicas != 3 || got.Status.ReadyReplicas != 3 {
		t.Errorf("status = %+v; want 3 replicas, 3 ready", got.Status)
	}
	h.edit("replicasets", "default", "frontend", func(o api.Object) { one := int32(1); o.(*api.ReplicaSet).Spec.Replicas = &one })
	h.settle()
	if s := h.statsOf(rs.UID); s.active != 1 || s.terminating != 2 {
		t.Errorf("after scaling to 1: %d active, %d terminating; want 1 and 2", s.active, s.terminating)
	}
}

// TestDeploymentHashCollision: a foreign ReplicaSet holding the name of a
// revision bumps the Deployment's collisionCount and its ReplicaSet gets
// another name.
func TestDeploymentHashCollision(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	d := deployment("web", 1, "nginx:1")
	api.SetDefaults(d)
	hash := templateHash(&d.Spec.Template, nil)
	one := int32(1)
	h.create(&api.ReplicaSet{
		ObjectMeta: api.ObjectMeta{Name: "web-" + hash, Namespace: "default"},
		Spec: api.ReplicaSetSpec{Replicas: &one, Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Template: podTemplate("other", "busybox")},
	})
	h.create(d)
	for range 3 {
		h.settle()
		h.advance(time.Second) // the retry after the collision
	}
	got := h.get("deployments", "default", "web").(*api.Deployment)
	rss := h.replicaSets("web")
	if got.Status.CollisionCount == nil || *got.Status.CollisionCount != 1 || len(rss) != 1 || rss[0].Name == "web-"+hash {
		t.Fatalf("collisionCount %v, replica sets %d (%v); want 1 and one under a new name", got.Status.CollisionCount, len(rss), rss)
	}
}
