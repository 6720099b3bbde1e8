package kubelet

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/api"
)

// TestForceDeleteStopsAtOnce: the server force-deleted a running pod (a
// DELETED event, no deletionTimestamp): its containers are killed at
// once (grace 0) and removed, without the fake clock moving, even one
// that ignores SIGTERM under a 30 s grace period.
func TestForceDeleteStopsAtOnce(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "stubborn")
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
	h.rt.IgnoreSIGTERM("stubborn")
	h.send(config.ADD, pod)
	h.settle()
	if c, _ := h.newest("u1", "stubborn"); c.State != runtime.StateRunning {
		t.Fatalf("state before delete = %s; want running", c.State)
	}
	h.send(config.REMOVE, pod)
	h.settle()
	for _, c := range h.rt.Calls() {
		if c.Method == fake.MethodStopContainer && c.Grace != 0 {
			t.Errorf("StopContainer(%s) grace = %v; want 0 (force delete)", c.Arg, c.Grace)
		}
	}
	if got := h.rt.CallCount(fake.MethodStopContainer, ""); got != 1 {
		t.Errorf("StopContainer calls = %d; want 1", got)
	}
	if h.rt.HasSandbox("u1") || len(h.rt.ContainerIDs("u1", "stubborn")) != 0 {
		t.Error("containers or sandbox left after a force delete")
	}
}

// TestForceDeleteCutsGracefulStopShort: a pod stopping gracefully (30 s,
// its container ignores SIGTERM) is force-deleted meanwhile: the running
// stop is preempted and the container killed at once.
func TestForceDeleteCutsGracefulStopShort(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "stubborn")
	h.rt.IgnoreSIGTERM("stubborn")
	h.send(config.ADD, pod)
	h.settle()
	del := *pod
	del.DeletionTimestamp = api.NewTimePtr(h.clock.Now())
	del.DeletionGracePeriodSeconds = ptr(int64(30))
	waiters := h.clock.Waiters()
	h.send(config.DELETE, &del)
	h.clock.BlockUntil(waiters + 1) // the graceful stop waits on the clock
	h.clock.Advance(time.Second)
	h.send(config.REMOVE, &del)
	h.settle()
	if len(h.rt.ContainerIDs("u1", "stubborn")) != 0 || h.rt.HasSandbox("u1") {
		t.Fatal("container left 1 s into a 30 s graceful stop after a force delete")
	}
	if got := h.status.terminatedCount("u1"); got != 1 {
		t.Errorf("PodTerminated calls = %d; want 1", got)
	}
}

// TestStaticPodRemovalKeepsItsGrace: a static pod whose file went is not
// the server's word: it stops with its own grace period.
func TestStaticPodRemovalKeepsItsGrace(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "app")
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(5))
	h.sendFrom(config.SourceFile, config.ADD, pod)
	h.settle()
	h.sendFrom(config.SourceFile, config.REMOVE, pod)
	h.settle()
	for _, c := range h.rt.Calls() {
		if c.Method == fake.MethodStopContainer && c.Grace != 5*time.Second {
			t.Errorf("StopContainer(%s) grace = %v; want 5s", c.Arg, c.Grace)
		}
	}
}
