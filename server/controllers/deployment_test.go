package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

var nodes3 = []string{"n1", "n2", "n3"}

func (h *harness) addNodes(names ...string) {
	for _, n := range names {
		h.create(readyNode(n, nil))
		h.beat(n)
	}
}

func TestDeploymentKeepsReplicas(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	d := h.create(deployment("web", 3, "nginx:1")).(*api.Deployment)
	h.settle()
	s := h.statsOf(d.UID)
	if s.active != 3 || len(s.byHash) != 1 {
		t.Fatalf("after create: %d active pods in %d revisions; want 3 in 1", s.active, len(s.byHash))
	}
	for _, p := range h.pods() {
		if p.Labels["app"] != "web" || p.Labels[LabelPodTemplateHash] == "" || p.Annotations[AnnotationRevision] != "1" {
			t.Errorf("pod %s labels %v annotations %v; want app=web, a template hash and revision 1", p.Name, p.Labels, p.Annotations)
		}
	}
	h.cycle(nodes3...)
	got := h.get("deployments", "default", "web").(*api.Deployment)
	if st := got.Status; st.Replicas != 3 || st.ReadyReplicas != 3 || st.AvailableReplicas != 3 || st.UpdatedReplicas != 3 || st.ObservedGeneration != 1 {
		t.Errorf("status = %+v; want 3 replicas, all ready, available and updated, generation 1", st)
	}
	if c := findCondition(got.Status.Conditions, DeploymentAvailable); c == nil || c.Status != api.ConditionTrue {
		t.Errorf("Available condition = %+v; want True", c)
	}
	if c := findCondition(got.Status.Conditions, DeploymentProgressing); c == nil || c.Reason != reasonNewRSAvailable {
		t.Errorf("Progressing condition = %+v; want reason %s", c, reasonNewRSAvailable)
	}

	// A pod removed (force-deleted) or marked for deletion is replaced.
	ps := h.pods()
	h.remove("pods", "default", ps[0].Name)
	h.settle()
	if s := h.statsOf(d.UID); s.active != 3 {
		t.Fatalf("after a pod was deleted: %d active; want 3", s.active)
	}
	// A failed pod is replaced too.
	p := h.get("pods", "default", ps[1].Name).(*api.Pod)
	p.Status.Phase = api.PodFailed
	if err := h.store.Update(h.ctx, p); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if s := h.statsOf(d.UID); s.active != 3 {
		t.Fatalf("after a pod failed: %d active; want 3", s.active)
	}
}

func TestDeploymentScale(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	d := h.create(deployment("web", 2, "nginx:1")).(*api.Deployment)
	h.cycle(nodes3...)
	for _, want := range []int32{7, 1, 0, 4} {
		h.edit("deployments", "default", "web", func(o api.Object) { o.(*api.Deployment).Spec.Replicas = &want })
		for range 3 {
			h.cycle(nodes3...)
		}
		s := h.statsOf(d.UID)
		if s.active != int(want) || s.terminating != 0 {
			t.Fatalf("scaled to %d: %d active, %d terminating", want, s.active, s.terminating)
		}
		got := h.get("deployments", "default", "web").(*api.Deployment)
		if got.Status.Replicas != want || got.Status.AvailableReplicas != want {
			t.Errorf("scaled to %d: status %+v", want, got.Status)
		}
	}
	if h.rec.has(reasonScaling) == 0 {
		t.Error("no ScalingReplicaSet events recorded")
	}
}

// TestRollingUpdateBounds steps a rolling update one agent action at a
// time and checks its bounds at every step: never fewer than
// replicas-maxUnavailable ready pods, never more than replicas+maxSurge
// pods.
func TestRollingUpdateBounds(t *testing.T) {
	for _, tc := range []struct {
		replicas        int32
		surge, unavail  api.IntOrString
		wantMaxTotal    int
		wantMinAvailble int
	}{
		{10, api.FromInt(3), api.FromInt(2), 13, 8},
		{10, api.FromString("25%"), api.FromString("25%"), 13, 8},
		{4, api.FromInt(0), api.FromInt(1), 4, 3},
		{5, api.FromInt(1), api.FromInt(0), 6, 5},
	} {
		t.Run(fmt.Sprintf("replicas=%d/surge=%v/unavailable=%v", tc.replicas, tc.surge, tc.unavail), func(t *testing.T) {
			h := newHarness(t)
			h.addNodes(nodes3...)
			dep := deployment("web", tc.replicas, "nginx:1")
			dep.Spec.Strategy = api.DeploymentStrategy{Type: api.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &api.RollingUpdateDeployment{MaxSurge: &tc.surge, MaxUnavailable: &tc.unavail}}
			d := h.create(dep).(*api.Deployment)
			for range 3 {
				h.cycle(nodes3...)
			}
			h.edit("deployments", "default", "web", func(o api.Object) {
				o.(*api.Deployment).Spec.Template.Spec.Containers[0].Image = "nginx:2"
			})
			h.settle()
			for step := 0; ; step++ {
				if step > 100 {
					t.Fatal("rollout did not finish in 100 steps")
				}
				s := h.statsOf(d.UID)
				if s.ready < tc.wantMinAvailble {
					t.Fatalf("step %d: %d ready pods; want at least %d", step, s.ready, tc.wantMinAvailble)
				}
				// As in Kubernetes, pods being deleted do not count
				// towards the surge.
				if s.active > tc.wantMaxTotal {
					t.Fatalf("step %d: %d active pods; want at most %d", step, s.active, tc.wantMaxTotal)
				}
				got := h.get("deployments", "default", "web").(*api.Deployment)
				if len(s.byHash) == 1 && s.active == int(tc.replicas) && got.Status.UpdatedReplicas == tc.replicas && got.Status.AvailableReplicas == tc.replicas {
					if got.Annotations[AnnotationRevision] != "2" {
						t.Errorf("revision = %q; want 2", got.Annotations[AnnotationRevision])
					}
					for _, p := range h.pods() {
						if p.DeletionTimestamp != nil {
							continue // its agent has yet to confirm
						}
						if p.Spec.Containers[0].Image != "nginx:2" || p.Annotations[AnnotationRevision] != "2" {
							t.Errorf("pod %s image %s revision %s after the rollout", p.Name, p.Spec.Containers[0].Image, p.Annotations[AnnotationRevision])
						}
					}
					return
				}
				// One agent action per step: bind and run the new pods,
				// or confirm deletions, never both at once.
				if step%2 == 0 {
					h.bind(nodes3...)
					h.run(nodes3...)
				} else {
					h.run(nodes3...)
				}
				h.settle()
			}
		})
	}
}

func TestRecreateStopsOldPodsFirst(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	dep := deployment("db", 3, "postgres:15")
	dep.Spec.Strategy = api.DeploymentStrategy{Type: api.RecreateDeploymentStrategyType}
	d := h.create(dep).(*api.Deployment)
	for range 3 {
		h.cycle(nodes3...)
	}
	h.edit("deployments", "default", "db", func(o api.Object) {
		o.(*api.Deployment).Spec.Template.Spec.Containers[0].Image = "postgres:16"
	})
	h.settle()
	if s := h.statsOf(d.UID); s.active != 0 || s.terminating != 3 {
		t.Fatalf("after the template change: %d active, %d terminating; want 0 and 3", s.active, s.terminating)
	}
	h.run(nodes3...) // agents stop the old pods
	h.settle()
	if s := h.statsOf(d.UID); s.active != 3 || s.terminating != 0 {
		t.Fatalf("after the old pods stopped: %d active, %d terminating; want 3 and 0", s.active, s.terminating)
	}
}

func TestPlanRolloutTable(t *testing.T) {
	now := epoch
	mk := func(hash string, n, ready int) []*api.Pod {
		var out []*api.Pod
		for i := range n {
			p := barePod(fmt.Sprintf("%s-%d", hash, i), "n1")
			p.Labels = map[string]string{LabelPodTemplateHash: hash}
			if i < ready {
				p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}
			}
			out = append(out, p)
		}
		return out
	}
	surge, unavail := api.FromInt(1), api.FromInt(1)
	d := deployment("web", 4, "x")
	d.Spec.Strategy = api.DeploymentStrategy{Type: api.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &api.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}}
	for _, tc := range []struct {
		name                 string
		pods                 []*api.Pod
		wantCreate, wantDrop int
	}{
		{"fresh", nil, 4, 0},
		{"steady", mk("new", 4, 4), 0, 0},
		{"too many", mk("new", 6, 6), 0, 2},
		{"rollout starts", mk("old", 4, 4), 1, 1},
		{"new not ready yet", append(mk("old", 3, 3), mk("new", 2, 0)...), 0, 0},
		{"one new ready", append(mk("old", 3, 3), mk("new", 2, 1)...), 0, 1},
		{"unready old goes first", append(mk("old", 4, 2), mk("new", 1, 0)...), 0, 1},
	} {
		g := groupPods(tc.pods, "new", 0, now)
		plan := planRollout(d, g)
		if plan.create != tc.wantCreate || len(plan.delete) != tc.wantDrop {
			t.Errorf("planRollout(%s) = create %d, delete %d; want %d, %d", tc.name, plan.create, len(plan.delete), tc.wantCreate, tc.wantDrop)
		}
	}
}

func TestDeploymentMinReadySecondsAndDeadline(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	dep := deployment("web", 2, "nginx:1")
	dep.Spec.MinReadySeconds = 10
	pd := int32(30)
	dep.Spec.ProgressDeadlineSeconds = &pd
	h.create(dep)
	h.settle()
	h.cycle(nodes3...)
	got := h.get("deployments", "default", "web").(*api.Deployment)
	if got.Status.ReadyReplicas != 2 || got.Status.AvailableReplicas != 0 {
		t.Fatalf("ready but not for minReadySeconds: status %+v; want 2 ready, 0 available", got.Status)
	}
	h.beat(nodes3...)
	h.advance(11 * time.Second)
	got = h.get("deployments", "default", "web").(*api.Deployment)
	if got.Status.AvailableReplicas != 2 {
		t.Fatalf("after minReadySeconds: %d available; want 2", got.Status.AvailableReplicas)
	}
	// A rollout whose pods never run exceeds its deadline.
	h.edit("deployments", "default", "web", func(o api.Object) {
		o.(*api.Deployment).Spec.Template.Spec.Containers[0].Image = "nginx:broken"
	})
	h.settle()
	h.beat(nodes3...)
	h.advance(31 * time.Second)
	got = h.get("deployments", "default", "web").(*api.Deployment)
	if c := findCondition(got.Status.Conditions, DeploymentProgressing); c == nil || c.Reason != reasonDeadlineExceeded || c.Status != api.ConditionFalse {
		t.Errorf("Progressing = %+v; want False %s", c, reasonDeadlineExceeded)
	}
}

// TestDeploymentRevisions: each template change is a new revision; going
// back to a template whose ReplicaSet still exists reuses that
// ReplicaSet under a new revision number (as Kubernetes does: rollout
// undo to 1 makes 1 the newest); a manifest re-applied without the
// annotations keeps counting.
func TestDeploymentRevisions(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	h.create(deployment("web", 2, "nginx:1"))
	h.settle()
	rev := func() string {
		return h.get("deployments", "default", "web").GetObjectMeta().Annotations[AnnotationRevision]
	}
	setImage := func(img string) {
		h.edit("deployments", "default", "web", func(o api.Object) { o.(*api.Deployment).Spec.Template.Spec.Containers[0].Image = img })
		h.settle()
	}
	if rev() != "1" {
		t.Fatalf("revision = %q; want 1", rev())
	}
	setImage("nginx:2") // no agent runs: old pods stay, new ones are created
	if rev() != "2" {
		t.Fatalf("revision after a template change = %q; want 2", rev())
	}
	setImage("nginx:1")
	if rev() != "3" {
		t.Fatalf("revision after going back to the running template = %q; want 3", rev())
	}
	if n := len(h.replicaSets("web")); n != 2 {
		t.Fatalf("%d replica sets after going back; want 2 (the first is reused)", n)
	}
	h.edit("deployments", "default", "web", func(o api.Object) {
		o.GetObjectMeta().Annotations = nil
		o.(*api.Deployment).Spec.Template.Spec.Containers[0].Image = "nginx:3"
	})
	h.settle()
	if rev() != "4" {
		t.Fatalf("revision after a re-applied manifest with a new template = %q; want 4", rev())
	}
}

// TestDeploymentQueuedOnlyByCountedPodChanges: a pod's bind or a change
// of its container statuses does not queue its Deployment (each sync
// walks every pod of it); a change the Deployment counts (ready, labels,
// deletion, finished) does. The pod informer hears the changes from the
// store (Resync) and the queue is read without running the sync.
func TestDeploymentQueuedOnlyByCountedPodChanges(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	h.create(deployment("web", 3, "nginx:1"))
	h.settle()
	queued := func(what string, want bool) {
		t.Helper()
		if _, err := h.m.informers.Pods.Resync(h.ctx); err != nil {
			t.Fatal(err)
		}
		k, ok := h.m.Deploy.queue.TryGet()
		if ok {
			h.m.Deploy.queue.Done(k)
		}
		if ok != want || ok && k != "default/web" {
			t.Fatalf("after %s: Deployment queued %v (key %q); want %v", what, ok, k, want)
		}
	}
	queued("settling", false)
	h.bind(nodes3...)
	queued("the binds", false)
	p := h.pods()[0]
	p.Status.Phase = api.PodRunning
	p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "main", RestartCount: 1}}
	if err := h.store.Update(h.ctx, p); err != nil {
		t.Fatal(err)
	}
	queued("a phase and container status change", false)
	h.run(nodes3...)
	queued("the pods' Ready", true)
	h.edit("pods", "default", p.Name, func(o api.Object) { o.(*api.Pod).Labels["extra"] = "x" })
	queued("a label", true)
	h.edit("pods", "default", p.Name, func(o api.Object) { o.(*api.Pod).Status.Phase = api.PodSucceeded })
	queued("the pod finishing", true)
}
