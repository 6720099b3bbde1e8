package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// fakeRecorder keeps events in memory.
type fakeRecorder struct {
	mu     sync.Mutex
	events []string // "Type Reason ns/name: message"
}

func (r *fakeRecorder) Eventf(_ context.Context, obj api.Object, typ, reason, format string, args ...any) {
	m := obj.GetObjectMeta()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s/%s: %s", typ, reason, m.Namespace, m.Name, fmt.Sprintf(format, args...)))
}

func (r *fakeRecorder) find(prefix string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if strings.HasPrefix(e, prefix) {
			return e, true
		}
	}
	return "", false
}

// schedHarness runs a Scheduler on a real store with a fake clock.
type schedHarness struct {
	t     *testing.T
	store *storage.Store
	clk   *clock.Fake
	rec   *fakeRecorder
	s     *Scheduler
}

func startScheduler(t *testing.T, cfg Config) *schedHarness {
	t.Helper()
	h := &schedHarness{t: t, store: storagetest.Open(t, storage.Options{}), clk: clock.NewFake(st.Epoch), rec: &fakeRecorder{}}
	cfg.Store, cfg.Clock, cfg.Recorder = h.store, h.clk, h.rec
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New = %v", err)
	}
	h.s = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v; want nil", err)
		}
	})
	return h
}

func (h *schedHarness) create(objs ...api.Object) {
	h.t.Helper()
	for _, o := range objs {
		if err := h.store.Create(context.Background(), o); err != nil {
			h.t.Fatalf("Create(%s) = %v", o.GetObjectMeta().Name, err)
		}
	}
}

func (h *schedHarness) pod(name string) *api.Pod {
	h.t.Helper()
	o, err := h.store.Get(context.Background(), "pods", "default", name)
	if err != nil {
		h.t.Fatalf("Get(%s) = %v", name, err)
	}
	return o.(*api.Pod)
}

// eventually polls cond (real I/O: the store and the scheduler's
// goroutines), stepping the fake clock so backoffs end, until a deadline.
func (h *schedHarness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		h.clk.Advance(500 * time.Millisecond)
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSchedulerIntegrationRealStore(t *testing.T) {
	h := startScheduler(t, Config{})
	h.create(
		st.Node("n1", "2", "4Gi"),
		st.Node("n2", "2", "4Gi", st.Taint("dedicated", "gpu", "NoSchedule")),
		st.Pod("p1", "1", "1Gi", st.Created(st.Epoch)),
		st.Pod("p2", "1", "1Gi", st.Created(st.Epoch.Add(time.Second))),
		st.Pod("other", "1", "1Gi", func(p *api.Pod) { p.Spec.SchedulerName = "someone-else" }),
	)
	for _, name := range []string{"p1", "p2"} {
		h.eventually(name+" bound to n1", func() bool { return h.pod(name).Spec.NodeName == "n1" })
		p := h.pod(name)
		if c := podCondition(p, api.PodScheduled); c == nil || c.Status != api.ConditionTrue {
			t.Errorf("%s PodScheduled = %+v; want True", name, c)
		}
		want := fmt.Sprintf("Normal Scheduled default/%s: Successfully assigned default/%s to n1", name, name)
		h.eventually("event "+want, func() bool { _, ok := h.rec.find(want); return ok })
	}

	// p3 fits nowhere: condition and event explain why.
	h.create(st.Pod("p3", "1", "1Gi", st.Created(st.Epoch.Add(2*time.Second))))
	wantMsg := "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}."
	h.eventually("p3 unschedulable condition", func() bool {
		c := podCondition(h.pod("p3"), api.PodScheduled)
		return c != nil && c.Status == api.ConditionFalse && c.Reason == "Unschedulable" && strings.HasPrefix(c.Message, wantMsg)
	})
	h.eventually("FailedScheduling event", func() bool {
		_, ok := h.rec.find("Warning FailedScheduling default/p3: " + wantMsg)
		return ok
	})

	// Deleting p1 frees room for p3.
	if _, err := h.store.Delete(context.Background(), "pods", "default", "p1", ""); err != nil {
		t.Fatal(err)
	}
	h.eventually("p3 bound after p1 deleted", func() bool { return h.pod("p3").Spec.NodeName == "n1" })

	// A high-priority pod preempts one low-priority pod on n1.
	h.create(st.Pod("vip", "1", "1Gi", st.Priority(1000)))
	h.eventually("vip nominated to n1", func() bool { return h.pod("vip").Status.NominatedNodeName == "n1" })
	var victim string
	for _, name := range []string{"p2", "p3"} {
		if h.pod(name).DeletionTimestamp != nil {
			victim = name
		}
	}
	if victim == "" {
		t.Fatal("no victim marked for deletion")
	}
	if h.pod(map[string]string{"p2": "p3", "p3": "p2"}[victim]).DeletionTimestamp != nil {
		t.Error("both low-priority pods evicted; want one")
	}
	h.eventually("Preempted event", func() bool {
		_, ok := h.rec.find("Normal Preempted default/" + victim + ": Preempted by pod uid-vip on node n1")
		return ok
	})
	// The agent confirms the victim's deletion; vip is then bound.
	if _, err := h.store.Delete(context.Background(), "pods", "default", victim, ""); err != nil {
		t.Fatal(err)
	}
	h.eventually("vip bound to n1", func() bool { return h.pod("vip").Spec.NodeName == "n1" })

	if got := h.pod("other").Spec.NodeName; got != "" {
		t.Errorf("pod of another scheduler bound to %q; want left alone", got)
	}
	// The binding is visible in the store before the scheduler's loop
	// counts it, so the counters are awaited too (a slow machine, such as
	// armv7 under qemu, reads them in between).
	m := h.s.Metrics()
	h.eventually("metrics", func() bool { return m.Scheduled.Load() == 4 && m.E2E.Count() == 4 })
	if m.Scheduled.Load() != 4 || m.Unschedulable.Load() == 0 || m.Preemptions.Load() != 1 || m.E2E.Count() != 4 {
		t.Errorf("metrics scheduled=%d unschedulable=%d preemptions=%d e2e=%d; want 4, >0, 1, 4",
			m.Scheduled.Load(), m.Unschedulable.Load(), m.Preemptions.Load(), m.E2E.Count())
	}
}

func TestSchedulerNodeAddedWakesUnschedulable(t *testing.T) {
	h := startScheduler(t, Config{})
	h.create(st.Pod("p", "1", "1Gi", st.NodeSelector("zone", "b")))
	h.eventually("p unschedulable", func() bool {
		c := podCondition(h.pod("p"), api.PodScheduled)
		return c != nil && c.Status == api.ConditionFalse && c.Message == "0/0 nodes are available."
	})
	h.create(st.Node("a", "4", "8Gi", st.Labels("zone", "a")), st.Node("b", "4", "8Gi", st.Labels("zone", "b")))
	h.eventually("p bound to b", func() bool { return h.pod("p").Spec.NodeName == "b" })
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without a store = nil error")
	}
	s := storagetest.Open(t, storage.Options{})
	if _, err := New(Config{Store: s, Scoring: "Random"}); err == nil || !strings.Contains(err.Error(), "Random") {
		t.Errorf("New with scoring Random = %v; want an error naming it", err)
	}
	if _, err := New(Config{Store: s, Scoring: MostAllocated}); err != nil {
		t.Errorf("New(MostAllocated) = %v", err)
	}
}
