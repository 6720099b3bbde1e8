package kubelet

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/fake"
	"github.com/skiffhq/skiff/api"
)

func TestCrashLoopBackOffTiming(t *testing.T) {
	h := newHarness(t)
	h.send(config.ADD, mkPod("u1", "c"))
	h.settle()

	// The first crash restarts at once.
	h.exit("u1", "c", 1)
	h.settle()
	if c, _ := h.newest("u1", "c"); c.RestartCount != 1 || c.State != runtime.StateRunning {
		t.Fatalf("after first crash: %+v; want restart 1 running", c)
	}
	restart := 1
	for _, delay := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second} {
		h.exit("u1", "c", 1)
		h.settle()
		cs := findStatus(h.status.get("u1").ContainerStatuses, "c")
		if got := waitingReasonOf(cs); got != ReasonCrashLoopBackOff {
			t.Fatalf("restart %d: waiting reason = %q; want CrashLoopBackOff", restart, got)
		}
		if cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
			t.Errorf("restart %d: lastState = %+v; want terminated with 1", restart, cs.LastTerminationState)
		}
		h.advance(delay - time.Second)
		if c, _ := h.newest("u1", "c"); c.RestartCount != restart {
			t.Fatalf("back-off %v: restarted after %v (restart %d)", delay, delay-time.Second, c.RestartCount)
		}
		h.advance(time.Second)
		restart++
		if c, _ := h.newest("u1", "c"); c.RestartCount != restart || c.State != runtime.StateRunning {
			t.Fatalf("back-off %v: after %v container = restart %d %s; want restart %d running", delay, delay, c.RestartCount, c.State, restart)
		}
		if got := h.status.get("u1").ContainerStatuses[0].RestartCount; got != int32(restart) {
			t.Errorf("status restartCount = %d; want %d", got, restart)
		}
	}

	// A container that ran for 10 minutes starts afresh: restarted at once.
	h.advance(10 * time.Minute)
	h.exit("u1", "c", 1)
	h.settle()
	if c, _ := h.newest("u1", "c"); c.RestartCount != restart+1 || c.State != runtime.StateRunning {
		t.Fatalf("after running 10m: %+v; want an immediate restart %d", c, restart+1)
	}
	// and the next crash waits 10 s again. The loop sees the exit before
	// the clock moves: a sync running while Advance steps the clock would
	// read the old time and arm its retry from the new one.
	h.exit("u1", "c", 1)
	h.settle()
	h.advance(9 * time.Second)
	if c, _ := h.newest("u1", "c"); c.RestartCount != restart+1 {
		t.Fatalf("back-off after reset restarted before 10s")
	}
	h.advance(time.Second)
	if c, _ := h.newest("u1", "c"); c.RestartCount != restart+2 {
		t.Fatalf("back-off after reset: restart %d; want %d after 10s", c.RestartCount, restart+2)
	}
	// Old instances are pruned: the newest and the previous stay.
	if ids := h.rt.ContainerIDs("u1", "c"); len(ids) != 2 {
		t.Errorf("instances kept = %v; want 2", ids)
	}
}

func TestImagePullBackOff(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "c")
	h.rt.SetPullError("busybox:1.36", errTest)
	h.send(config.ADD, pod)
	h.settle()
	reason := func() string {
		return waitingReasonOf(findStatus(h.status.get("u1").ContainerStatuses, "c"))
	}
	if !h.status.sawReason("u1", "c", ReasonErrImagePull) {
		t.Fatal("no status reported ErrImagePull after the failed pull")
	}
	if got := len(h.rt.Pulls()); got != 1 {
		t.Fatalf("pulls = %d; want 1", got)
	}
	if st := h.status.get("u1"); st.Phase != api.PodPending {
		t.Errorf("phase = %q; want Pending", st.Phase)
	}
	h.advance(time.Second)
	if got := reason(); got != ReasonImagePullBackOff {
		t.Fatalf("in back-off: reason %q; want ImagePullBackOff", got)
	}
	pulls := len(h.rt.Pulls())
	h.advance(8 * time.Second) // 9 s after the failure
	if got := len(h.rt.Pulls()); got != pulls {
		t.Fatalf("pulled again %d times within the 10 s back-off", got-pulls)
	}
	h.advance(time.Second)
	if got := len(h.rt.Pulls()); got != pulls+1 {
		t.Fatalf("pulls after 10 s = %d; want %d", got, pulls+1)
	}
	if got := reason(); got != ReasonErrImagePull {
		t.Errorf("after the second failure: reason %q; want ErrImagePull", got)
	}
	// the next back-off is 20 s
	h.rt.SetPullError("busybox:1.36", nil)
	h.advance(19 * time.Second)
	if _, ok := h.newest("u1", "c"); ok {
		t.Fatal("started before the 20 s back-off ended")
	}
	h.advance(time.Second)
	if c, ok := h.newest("u1", "c"); !ok || c.State != runtime.StateRunning {
		t.Fatalf("after the pull succeeded: %+v, %v; want running", c, ok)
	}
	if got := h.rt.CallCount(fake.MethodEnsureImage, ""); got != 3 {
		t.Errorf("EnsureImage calls = %d; want 3", got)
	}
}

func TestBackoffSteps(t *testing.T) {
	b := newBackoff(10*time.Second, 5*time.Minute)
	now := t0
	if got := b.remainingSince("k", now, now); got != 0 {
		t.Fatalf("remainingSince(new key) = %v; want 0", got)
	}
	b.next("k", now, now)
	if got := b.remainingSince("k", now, now.Add(4*time.Second)); got != 6*time.Second {
		t.Errorf("remainingSince(4s later) = %v; want 6s", got)
	}
	for _, want := range []time.Duration{20, 40, 80, 160, 300, 300} {
		b.next("k", now, now)
		if got := b.delay("k"); got != want*time.Second {
			t.Errorf("delay = %v; want %vs", got, want)
		}
	}
	b.gc(now.Add(11 * time.Minute))
	if got := b.delay("k"); got != 0 {
		t.Errorf("delay after gc = %v; want 0", got)
	}
}
