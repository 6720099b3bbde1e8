package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// announced returns a bind of a pod at resourceVersion rv to n1,
// announced in r as a batch of its own.
func announced(r *selfBinds, name, rv string) (*selfBatch, []*selfBind, *api.Pod) {
	p := st.Pod(name, "1", "1Gi")
	p.ResourceVersion = rv
	pi := NewPodInfo(p)
	bound := boundPod(p, "n1", st.Epoch)
	b, sbs := r.announce([]bindRequest{{qp: &QueuedPod{PodInfo: pi}, pod: p, node: "n1"}}, []api.Object{bound})
	return b, sbs, bound
}

func TestSelfBindsMatchOwnWriteOnly(t *testing.T) {
	ctx := context.Background()
	r := newSelfBinds()

	// The event arrives before UpdateBatch returned: match waits for the
	// outcome, then recognises the bind's revision.
	b, sbs, bound := announced(r, "mine", "10")
	got := make(chan *PodInfo, 1)
	go func() {
		pi, ok := r.match(ctx, "default/mine", 12)
		if !ok {
			pi = nil
		}
		got <- pi
	}()
	bound.ResourceVersion = "12" // what UpdateBatch does on success
	r.settle(b, sbs, []error{nil})
	pi := <-got
	if pi == nil || pi.Pod != bound || pi.Pod.Spec.NodeName != "n1" || pi.Key != "default/mine" {
		t.Fatalf("match of the bind's own event = %+v; want the bound pod", pi)
	}
	if _, ok := r.match(ctx, "default/mine", 13); ok {
		t.Error("a later change of the same pod matched the bind again")
	}

	// A foreign write won the race: the bind failed with a conflict and
	// the foreign event must be decoded.
	b, sbs, _ = announced(r, "raced", "20")
	r.settle(b, sbs, []error{storage.ErrConflict})
	if _, ok := r.match(ctx, "default/raced", 21); ok {
		t.Error("a foreign change matched a bind that failed")
	}

	// An older event of the pod (at or before the state the bind was
	// decided on) is not the bind and does not consume it.
	b, sbs, bound = announced(r, "late", "30")
	if _, ok := r.match(ctx, "default/late", 30); ok {
		t.Error("the event of the decided-on state matched the bind")
	}
	bound.ResourceVersion = "31"
	r.settle(b, sbs, []error{nil})
	if _, ok := r.match(ctx, "default/late", 31); !ok {
		t.Error("the bind's event did not match after an older event")
	}

	// A successful bind whose revision differs from the event's (its
	// event was missed) does not claim another change.
	b, sbs, bound = announced(r, "odd", "40")
	bound.ResourceVersion = "45"
	r.settle(b, sbs, []error{nil})
	if _, ok := r.match(ctx, "default/odd", 44); ok {
		t.Error("an event at another revision matched the bind")
	}

	// A pod without a resourceVersion is not registered (its bind has no
	// precondition to reason from): its events are decoded.
	b, sbs, bound = announced(r, "unversioned", "")
	bound.ResourceVersion = "50"
	r.settle(b, sbs, []error{nil})
	if _, ok := r.match(ctx, "default/unversioned", 50); ok {
		t.Error("the event of a bind without precondition matched")
	}

	// A pod with no bind announced is never matched.
	if _, ok := r.match(ctx, "default/unknown", 5); ok {
		t.Error("an unannounced pod matched")
	}
	if len(r.binds) != 0 {
		t.Errorf("%d binds left registered; want none", len(r.binds))
	}
}

func TestSelfBindsMatchGivesUpWithContext(t *testing.T) {
	r := newSelfBinds()
	announced(r, "stuck", "1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := r.match(ctx, "default/stuck", 2); ok {
		t.Error("match with an ended context and the batch unsettled = ok")
	}
}

func TestSelfBindsForgetListed(t *testing.T) {
	r := newSelfBinds()
	announced(r, "overtaken", "5")
	announced(r, "current", "7")
	listed := func(name, rv string) *PodInfo {
		p := st.Pod(name, "1", "1Gi")
		p.ResourceVersion = rv
		return NewPodInfo(p)
	}
	r.forgetListed([]*PodInfo{listed("overtaken", "6"), listed("current", "7")})
	if _, ok := r.binds["default/overtaken"]; ok {
		t.Error("a bind the list has overtaken is still registered")
	}
	if _, ok := r.binds["default/current"]; !ok {
		t.Error("a bind of the listed state was dropped")
	}
}

// TestSchedulerSkipsOwnBindEventsNotForeignChanges runs the scheduler on
// a real store: its own binds come back without decoding, while a foreign
// change to a bound pod (it finished) is decoded and frees its node.
func TestSchedulerSkipsOwnBindEventsNotForeignChanges(t *testing.T) {
	h := startScheduler(t, Config{})
	h.create(st.Node("n1", "2", "4Gi"), st.Pod("a", "1", "1Gi"), st.Pod("b", "1", "1Gi"))
	for _, name := range []string{"a", "b"} {
		h.eventually(name+" bound", func() bool { return h.pod(name).Spec.NodeName == "n1" })
	}
	m := h.s.Metrics()
	h.eventually("both binds confirmed from the watch", func() bool { return m.SelfBoundEvents.Load() == 2 })

	h.create(st.Pod("c", "1", "1Gi"))
	h.eventually("c unschedulable", func() bool { return m.Unschedulable.Load() > 0 })
	// Another writer marks a as finished: the scheduler must see it.
	a := h.pod("a")
	a.Status.Phase = api.PodSucceeded
	if err := h.store.Update(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	h.eventually("c bound once a finished", func() bool { return h.pod("c").Spec.NodeName == "n1" })
	h.eventually("c's bind confirmed", func() bool { return m.SelfBoundEvents.Load() == 3 })
}

// TestSchedulerKeepsWatchWhileWaitingForBinds holds the pod informer on
// an event whose bind outcome is pending while 300 more changes are
// committed to a store whose watchers may fall only 16 events behind: the
// informer keeps reading its watch meanwhile, so it is not cut off, and
// once the outcome is known it goes on (a pod created last is bound).
func TestSchedulerKeepsWatchWhileWaitingForBinds(t *testing.T) {
	store := storagetest.Open(t, storage.Options{WatchBuffer: 16})
	ctx := context.Background()
	create := func(o api.Object) {
		t.Helper()
		if err := store.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	update := func(name string, label string) {
		t.Helper()
		_, err := store.GuaranteedUpdate(ctx, "pods", "default", name, func(cur api.Object) (api.Object, error) {
			p := *cur.(*api.Pod)
			p.Labels = map[string]string{"v": label}
			return &p, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	create(st.Node("n1", "4", "8Gi", st.Labels("zone", "a")))
	for i := range 100 {
		create(st.Pod(fmt.Sprintf("p%02d", i), "100m", "10Mi", st.NodeSelector("zone", "b")))
	}
	s, err := New(Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	m := s.Metrics()
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond) // polling real I/O with a deadline
		}
	}
	wait("every pod tried", func() bool { return m.Unschedulable.Load() >= 100 })

	// A bind of p00 is in flight as far as the informer knows; another
	// writer changes p00, so the informer waits for the bind's outcome.
	o, err := store.Get(ctx, "pods", "default", "p00")
	if err != nil {
		t.Fatal(err)
	}
	p := o.(*api.Pod)
	batch, binds := s.self.announce([]bindRequest{{qp: &QueuedPod{PodInfo: NewPodInfo(p)}, pod: p, node: "n1"}}, []api.Object{boundPod(p, "n1", st.Epoch)})
	update("p00", "x")
	for round := range 3 {
		for i := 1; i < 100; i++ {
			update(fmt.Sprintf("p%02d", i), fmt.Sprint(round))
		}
	}
	create(st.Pod("last", "100m", "10Mi"))
	r0 := m.Relists.Load()
	s.self.settle(batch, binds, []error{storage.ErrConflict}) // the other writer won

	wait("the last pod bound", func() bool { return m.Scheduled.Load() == 1 })
	if n := m.Relists.Load(); n != 0 || r0 != 0 {
		t.Errorf("%d relists (%d before the outcome); want the watch kept", n, r0)
	}
}
