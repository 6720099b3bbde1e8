package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/uid"
	"github.com/skiffhq/skiff/server/scheduler"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// epoch is the fake clock's start in every test.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// harness runs the controllers synchronously over a real store on a
// temporary file, with a fake clock: settle lists the store into the
// informers and reconciles every queued key until nothing changes, so a
// test sees exactly the state the controllers converge to. It plays the
// scheduler (bind) and the agents (run) itself.
type harness struct {
	t     *testing.T
	ctx   context.Context
	clk   *clock.Fake
	store *storage.Store
	m     *Manager
	rec   *fakeRecorder

	mu    sync.Mutex
	beats map[string]time.Time // in-memory heartbeats (apiserver.Liveness)
}

type fakeRecorder struct {
	mu     sync.Mutex
	events []string // "reason: message"
}

func (r *fakeRecorder) Eventf(_ context.Context, _ api.Object, _, reason, format string, args ...any) {
	r.mu.Lock()
	r.events = append(r.events, reason+": "+fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *fakeRecorder) has(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if len(e) > len(reason) && e[:len(reason)+1] == reason+":" {
			n++
		}
	}
	return n
}

func newHarness(t *testing.T, tweak ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), clk: clock.NewFake(epoch), rec: &fakeRecorder{}, beats: map[string]time.Time{}}
	h.store = storagetest.Open(t, storage.Options{Clock: h.clk, CompactInterval: -1, CheckpointInterval: -1})
	cfg := Config{
		Store: h.store, Clock: h.clk,
		Recorder: func(string) EventRecorder { return h.rec },
		Liveness: func(n string) (time.Time, bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			t, ok := h.beats[n]
			return t, ok
		},
	}
	for _, f := range tweak {
		f(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	h.m = m
	for _, i := range m.informers.all() {
		if _, err := i.Resync(h.ctx); err != nil {
			t.Fatal(err)
		}
	}
	m.Nodes.start(h.clk.Now())
	return h
}

// settle resyncs the informers and runs every ready key of every
// controller until the store stops changing.
func (h *harness) settle() {
	h.t.Helper()
	workers := []*worker{h.m.Deploy.worker(), h.m.Daemons.worker(), h.m.GC.worker(), h.m.Nodes.worker(), h.m.Endpoints.worker()}
	for round := 0; ; round++ {
		if round > 200 {
			h.t.Fatal("controllers did not settle in 200 rounds")
		}
		before := h.store.Revision()
		for _, i := range h.m.informers.all() {
			if _, err := i.Resync(h.ctx); err != nil {
				h.t.Fatal(err)
			}
		}
		for busy := true; busy; {
			busy = false
			for _, w := range workers {
				if k, ok := w.queue.TryGet(); ok {
					w.process(h.ctx, k, h.m.cfg.Logger)
					busy = true
				}
			}
		}
		if h.store.Revision() == before {
			return
		}
	}
}

// advance moves the fake clock and settles.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	h.clk.Advance(d)
	h.settle()
}

// create stores obj as a create through the API would.
func (h *harness) create(obj api.Object) api.Object {
	h.t.Helper()
	m := obj.GetObjectMeta()
	if m.UID == "" {
		m.UID = uid.New()
	}
	if m.CreationTimestamp.IsZero() {
		m.CreationTimestamp = api.NewTime(h.clk.Now())
	}
	m.Generation = 1
	api.SetTypeMeta(obj)
	api.SetDefaults(obj)
	if errs := api.Validate(obj); len(errs) > 0 {
		h.t.Fatalf("invalid fixture %s: %v", m.Name, errs)
	}
	if err := h.store.Create(h.ctx, obj); err != nil {
		h.t.Fatal(err)
	}
	return obj
}

// edit changes an object's spec as an API update would (generation+1).
func (h *harness) edit(resource, ns, name string, fn func(api.Object)) {
	h.t.Helper()
	_, err := h.store.GuaranteedUpdate(h.ctx, resource, ns, name, func(cur api.Object) (api.Object, error) {
		fn(cur)
		cur.GetObjectMeta().Generation++
		api.SetDefaults(cur)
		return cur, nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) remove(resource, ns, name string) {
	h.t.Helper()
	if _, err := h.store.Delete(h.ctx, resource, ns, name, ""); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) beat(nodes ...string) {
	h.mu.Lock()
	for _, n := range nodes {
		h.beats[n] = h.clk.Now()
	}
	h.mu.Unlock()
}

// pods returns the stored pods, by name.
func (h *harness) pods() []*api.Pod {
	h.t.Helper()
	objs, _, err := h.store.List(h.ctx, "pods", storage.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]*api.Pod, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Pod)
	}
	return out
}

func (h *harness) get(resource, ns, name string) api.Object {
	h.t.Helper()
	o, err := h.store.Get(h.ctx, resource, ns, name)
	if err != nil {
		h.t.Fatal(err)
	}
	return o
}

// live reports which nodes play along: the harness binds to, runs pods
// on and confirms deletions on only these.
func (h *harness) bind(live ...string) {
	h.t.Helper()
	count := map[string]int{}
	var pending []*api.Pod
	for _, p := range h.pods() {
		if p.Spec.NodeName != "" {
			count[p.Spec.NodeName]++
		} else if p.DeletionTimestamp == nil {
			pending = append(pending, p)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].Name < pending[j].Name })
	for _, p := range pending {
		best := ""
		for _, n := range live {
			if best == "" || count[n] < count[best] {
				best = n
			}
		}
		if best == "" {
			return
		}
		p.Spec.NodeName = best
		count[best]++
		if err := h.store.Update(h.ctx, p); err != nil {
			h.t.Fatal(err)
		}
	}
}

// run plays the agents of the live nodes: pods bound there become
// Running and Ready, pods marked for deletion there are removed.
func (h *harness) run(live ...string) {
	h.t.Helper()
	for _, p := range h.pods() {
		if !slices.Contains(live, p.Spec.NodeName) {
			continue
		}
		if p.DeletionTimestamp != nil {
			if _, err := h.store.Delete(h.ctx, "pods", p.Namespace, p.Name, ""); err != nil {
				h.t.Fatal(err)
			}
			continue
		}
		if ready, _ := podReady(p); ready || finished(p) {
			continue
		}
		p.Status.Phase = api.PodRunning
		p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue, LastTransitionTime: api.NewTime(h.clk.Now())}}
		if err := h.store.Update(h.ctx, p); err != nil {
			h.t.Fatal(err)
		}
	}
}

// cycle binds, runs and settles once.
func (h *harness) cycle(live ...string) {
	h.t.Helper()
	h.bind(live...)
	h.run(live...)
	h.settle()
}

// fixtures

func readyNode(name string, labels map[string]string) *api.Node {
	return &api.Node{
		ObjectMeta: api.ObjectMeta{Name: name, Labels: maps.Clone(labels)},
		Status: api.NodeStatus{
			Capacity:   api.ResourceList{api.ResourceCPU: resource.MustParse("4"), api.ResourceMemory: resource.MustParse("8Gi"), api.ResourcePods: resource.MustParse("110")},
			Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}},
		},
	}
}

func podTemplate(app, image string) api.PodTemplateSpec {
	return api.PodTemplateSpec{
		ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       api.PodSpec{Containers: []api.Container{{Name: "c", Image: image}}},
	}
}

func deployment(name string, replicas int32, image string) *api.Deployment {
	return &api.Deployment{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec: api.DeploymentSpec{
			Replicas: &replicas,
			Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, image),
		},
	}
}

func daemonSet(name, image string, nodeSelector map[string]string) *api.DaemonSet {
	ds := &api.DaemonSet{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec: api.DaemonSetSpec{
			Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, image),
		},
	}
	ds.Spec.Template.Spec.NodeSelector = nodeSelector
	return ds
}

func barePod(name, node string) *api.Pod {
	return &api.Pod{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       api.PodSpec{NodeName: node, Containers: []api.Container{{Name: "c", Image: "busybox"}}},
		Status:     api.PodStatus{Phase: api.PodPending},
	}
}

// podStats counts pods of owner uid.
type podStats struct {
	active, ready, terminating int
	byHash                     map[string]int
	byNode                     map[string]int
}

func (h *harness) statsOf(uid string) podStats {
	s := podStats{byHash: map[string]int{}, byNode: map[string]int{}}
	for _, p := range h.pods() {
		if ref := controllerRef(&p.ObjectMeta); ref == nil || ref.UID != uid {
			continue
		}
		if p.DeletionTimestamp != nil {
			s.terminating++
			continue
		}
		if finished(p) {
			continue
		}
		s.active++
		if r, _ := podReady(p); r {
			s.ready++
		}
		s.byHash[p.Labels[LabelPodTemplateHash]+p.Labels[LabelControllerRevisionHash]]++
		s.byNode[p.Spec.NodeName]++
	}
	return s
}

func schedPodInfo(t *api.PodTemplateSpec) *scheduler.PodInfo {
	return scheduler.NewPodInfo(&api.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec})
}
