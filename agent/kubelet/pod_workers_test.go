package kubelet

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// stubWork records what a worker does and can hold a sync until released.
type stubWork struct {
	mu      sync.Mutex
	log     []string // "sync:<image>", "kill", "terminated", "cleanup"
	running int
	maxRun  int
	hold    chan struct{} // non-nil: syncs wait for it (or ctx)
	entered chan struct{}
}

func (s *stubWork) record(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, e)
}

func (s *stubWork) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *stubWork) funcs() podFuncs {
	return podFuncs{
		sync: func(ctx context.Context, pod *api.Pod) (syncResult, error) {
			s.mu.Lock()
			s.running++
			s.maxRun = max(s.maxRun, s.running)
			hold := s.hold
			s.mu.Unlock()
			defer func() { s.mu.Lock(); s.running--; s.mu.Unlock() }()
			s.record("sync:" + pod.Spec.Containers[0].Image)
			if hold != nil {
				s.entered <- struct{}{}
				select {
				case <-hold:
				case <-ctx.Done():
					return syncResult{}, ctx.Err()
				}
			}
			return syncResult{}, nil
		},
		kill: func(ctx context.Context, pod *api.Pod, grace *int64, keep bool) error {
			s.record("kill")
			return nil
		},
		terminated: func(pod *api.Pod) { s.record("terminated") },
		cleanup:    func(ctx context.Context, pod *api.Pod) error { s.record("cleanup"); return nil },
		done:       func(uid string, err error, requeue time.Duration) {},
	}
}

func withImage(uid, image string) *api.Pod {
	p := mkPod(uid, "c")
	p.Spec.Containers[0].Image = image
	return p
}

func waitIdle(t *testing.T, w *podWorkers) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !w.idle() {
		if time.Now().After(deadline) {
			t.Fatal("workers did not become idle")
		}
		time.Sleep(time.Millisecond) // polling goroutines with a deadline
	}
}

func newTestWorkers(t *testing.T, s *stubWork) *podWorkers {
	ctx, cancel := context.WithCancel(context.Background())
	w := newPodWorkers(ctx, clock.NewFake(t0), s.funcs())
	t.Cleanup(func() { cancel(); w.wait() })
	return w
}

func TestPodWorkerSerialisesAndCoalesces(t *testing.T) {
	s := &stubWork{hold: make(chan struct{}), entered: make(chan struct{}, 10)}
	w := newTestWorkers(t, s)
	w.updatePod(withImage("u1", "v1"), workSync, nil, false)
	<-s.entered
	for _, img := range []string{"v2", "v3", "v4"} {
		w.updatePod(withImage("u1", img), workSync, nil, false)
	}
	close(s.hold)
	waitIdle(t, w)
	got := s.events()
	want := []string{"sync:v1", "sync:v4"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("work = %q; want %q (one sync at a time, pending syncs coalesced to the latest)", got, want)
	}
	if s.maxRun != 1 {
		t.Errorf("concurrent syncs of one pod = %d; want 1", s.maxRun)
	}
}

func TestPodWorkerKillWinsOverUpdate(t *testing.T) {
	s := &stubWork{hold: make(chan struct{}), entered: make(chan struct{}, 10)}
	w := newTestWorkers(t, s)
	w.updatePod(withImage("u1", "v1"), workSync, nil, false)
	<-s.entered
	w.updatePod(withImage("u1", "v2"), workSync, nil, false)
	w.updatePod(withImage("u1", "v2"), workKill, ptr(int64(5)), false)
	w.updatePod(withImage("u1", "v3"), workSync, nil, false) // after the kill: never runs
	// the kill cancelled the held sync; no need to release it
	waitIdle(t, w)
	got := s.events()
	want := []string{"sync:v1", "kill", "terminated"}
	if len(got) != len(want) {
		t.Fatalf("work = %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("work = %q; want %q", got, want)
		}
	}
	if st, _ := w.state("u1"); st != PodTerminated {
		t.Errorf("state = %v; want Terminated", st)
	}
}

func TestPodWorkerTerminatedNeverRestartsAndExitsOnRemoval(t *testing.T) {
	s := &stubWork{}
	w := newTestWorkers(t, s)
	pod := withImage("u1", "v1")
	w.updatePod(pod, workSync, nil, false)
	waitIdle(t, w)
	w.updatePod(pod, workKill, nil, false)
	waitIdle(t, w)
	w.updatePod(withImage("u1", "v2"), workSync, nil, false)
	waitIdle(t, w)
	w.updatePod(pod, workKill, nil, true) // removed by its source
	waitIdle(t, w)
	w.updatePod(withImage("u1", "v3"), workSync, nil, false)
	waitIdle(t, w)
	got := s.events()
	want := []string{"sync:v1", "kill", "terminated", "cleanup"}
	if len(got) != len(want) {
		t.Fatalf("work = %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("work = %q; want %q", got, want)
		}
	}
	if w.active("u1") {
		t.Error("worker still active after removal")
	}
	w.forgetFinished(func(string) bool { return false })
	if _, known := w.state("u1"); known {
		t.Error("finished record not forgotten")
	}
}

func TestPodStateString(t *testing.T) {
	for st, want := range map[PodState]string{PodSyncing: "Syncing", PodTerminating: "Terminating", PodTerminated: "Terminated", PodState(9): "PodState(?)"} {
		if got := st.String(); got != want {
			t.Errorf("PodState(%d).String() = %q; want %q", int(st), got, want)
		}
	}
}
