package kubelet

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// sandboxGate holds CreateSandbox of the pods in gate until their channel
// is closed, so a test can deliver updates while a sync is in progress.
// With honourCtx a cancelled sync returns at once; without, the call
// finishes anyway (as a runtime call in flight does) once released.
type sandboxGate struct {
	runtime.Runtime
	honourCtx bool
	mu        sync.Mutex
	gates     map[string]chan struct{}
	entered   chan string
}

func (g *sandboxGate) gate(uid string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := make(chan struct{})
	g.gates[uid] = c
	return c
}

func (g *sandboxGate) CreateSandbox(ctx context.Context, cfg runtime.SandboxConfig) (runtime.Sandbox, error) {
	g.mu.Lock()
	c := g.gates[cfg.PodUID]
	delete(g.gates, cfg.PodUID)
	g.mu.Unlock()
	if c != nil {
		g.entered <- cfg.PodUID
		if g.honourCtx {
			select {
			case <-c:
			case <-ctx.Done():
				return runtime.Sandbox{}, ctx.Err()
			}
		} else {
			<-c
		}
	}
	return g.Runtime.CreateSandbox(ctx, cfg)
}

// deleted returns a copy of pod with a deletionTimestamp and grace.
func deleted(pod *api.Pod, now time.Time, grace int64) *api.Pod {
	d := *pod
	d.DeletionTimestamp = api.NewTimePtr(now)
	d.DeletionGracePeriodSeconds = ptr(grace)
	return &d
}

// assertNoPodState fails unless the kubelet holds nothing of any pod: no
// worker goroutine, no worker record, no desired pod, status bookkeeping,
// queued sync, sandbox or container, and the status manager was told to
// forget every pod in uids.
func assertNoPodState(t *testing.T, h *harness, uids ...string) {
	t.Helper()
	w := h.k.workers
	w.mu.Lock()
	running, records := w.running, len(w.records)
	var left []string
	for uid, r := range w.records {
		left = append(left, uid+":"+r.state().String())
	}
	w.mu.Unlock()
	if running != 0 || records != 0 {
		t.Errorf("pod workers running = %d, records = %d %v; want 0, 0", running, records, left)
	}
	h.k.mu.Lock()
	if n := len(h.k.pods) + len(h.k.reasons) + len(h.k.sent) + len(h.k.evicted) + len(h.k.rejected); n != 0 {
		t.Errorf("kubelet per-pod state: pods %d reasons %d sent %d evicted %d rejected %d; want none",
			len(h.k.pods), len(h.k.reasons), len(h.k.sent), len(h.k.evicted), len(h.k.rejected))
	}
	h.k.mu.Unlock()
	h.k.queue.mu.Lock()
	if n := len(h.k.queue.due); n != 0 {
		t.Errorf("sync queue holds %d pods; want 0", n)
	}
	h.k.queue.mu.Unlock()
	if n := len(h.k.pleg.all()); n != 0 {
		t.Errorf("runtime holds %d pods; want 0", n)
	}
	h.status.mu.Lock()
	for _, uid := range uids {
		if h.status.removed[uid] == 0 {
			t.Errorf("status manager never told to forget pod %s", uid)
		}
	}
	h.status.mu.Unlock()
}

// TestChurnLeavesNoPodWorkers replays the orders pod churn (create, delete
// a moment later) produces and checks that once every pod has left its
// source, no worker, record or per-pod state is left. The soak found
// workers of deleted pods that never finished.
func TestChurnLeavesNoPodWorkers(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, h *harness, g *sandboxGate)
	}{
		{"delete and remove before the first sync", func(t *testing.T, h *harness, g *sandboxGate) {
			pod := mkPod("a", "c")
			h.send(config.ADD, pod)
			h.send(config.DELETE, deleted(pod, h.clock.Now(), 30))
			h.send(config.REMOVE, deleted(pod, h.clock.Now(), 30))
			h.settle()
		}},
		{"delete while the first sync runs (cancelled)", func(t *testing.T, h *harness, g *sandboxGate) {
			pod := mkPod("b", "c")
			gate := g.gate("b")
			h.send(config.ADD, pod)
			<-g.entered
			h.send(config.DELETE, deleted(pod, h.clock.Now(), 30))
			close(gate)
			h.settle()
			h.send(config.REMOVE, deleted(pod, h.clock.Now(), 30))
			h.settle()
		}},
		{"delete while the first sync runs (finishes)", func(t *testing.T, h *harness, g *sandboxGate) {
			g.honourCtx = false
			pod := mkPod("c", "c")
			gate := g.gate("c")
			h.send(config.ADD, pod)
			<-g.entered
			h.send(config.DELETE, deleted(pod, h.clock.Now(), 30))
			close(gate)
			h.settle()
			h.send(config.REMOVE, deleted(pod, h.clock.Now(), 30))
			h.settle()
		}},
		{"remove while the first sync runs", func(t *testing.T, h *harness, g *sandboxGate) {
			g.honourCtx = false
			pod := mkPod("d", "c")
			gate := g.gate("d")
			h.send(config.ADD, pod)
			<-g.entered
			h.send(config.REMOVE, pod)
			close(gate)
			h.settle()
		}},
		{"added already deleted (never started)", func(t *testing.T, h *harness, g *sandboxGate) {
			pod := deleted(mkPod("e", "c"), h.clock.Now(), 30)
			h.send(config.ADD, pod)
			h.settle()
			h.send(config.REMOVE, pod)
			h.settle()
		}},
		{"update then delete", func(t *testing.T, h *harness, g *sandboxGate) {
			pod := mkPod("f", "c")
			h.send(config.ADD, pod)
			h.settle()
			up := *pod
			up.Labels = map[string]string{"x": "y"}
			h.send(config.UPDATE, &up)
			h.send(config.DELETE, deleted(&up, h.clock.Now(), 30))
			h.settle()
			h.send(config.REMOVE, deleted(&up, h.clock.Now(), 30))
			h.settle()
		}},
		{"deleted while backing off", func(t *testing.T, h *harness, g *sandboxGate) {
			h.rt.SetStartError("crash", errors.New("exec format error"))
			pod := mkPod("g", "crash")
			h.send(config.ADD, pod)
			h.settle()
			h.advance(10 * time.Second) // a failed retry: now in back-off
			h.send(config.DELETE, deleted(pod, h.clock.Now(), 30))
			h.settle()
			h.send(config.REMOVE, deleted(pod, h.clock.Now(), 30))
			h.settle()
		}},
		{"removed by its source without deletion", func(t *testing.T, h *harness, g *sandboxGate) {
			pod := mkPod("h", "c")
			h.sendFrom(config.SourceFile, config.ADD, pod)
			h.settle()
			h.sendFrom(config.SourceFile, config.REMOVE, pod)
			h.settle()
		}},
		{"deleted with grace then removed mid-stop", func(t *testing.T, h *harness, g *sandboxGate) {
			h.rt.IgnoreSIGTERM("stubborn")
			pod := mkPod("i", "stubborn")
			h.send(config.ADD, pod)
			h.settle()
			waiters := h.clock.Waiters()
			h.send(config.DELETE, deleted(pod, h.clock.Now(), 30))
			h.clock.BlockUntil(waiters + 1)
			h.send(config.REMOVE, deleted(pod, h.clock.Now(), 30))
			h.settle()
		}},
		{"finished then deleted", func(t *testing.T, h *harness, g *sandboxGate) {
			pod := mkPod("j", "job")
			pod.Spec.RestartPolicy = api.RestartPolicyNever
			h.send(config.ADD, pod)
			h.settle()
			h.exit("j", "job", 0)
			h.settle()
			h.send(config.DELETE, deleted(pod, h.clock.Now(), 30))
			h.settle()
			h.send(config.REMOVE, deleted(pod, h.clock.Now(), 30))
			h.settle()
		}},
		{"declared failed by the server then removed", func(t *testing.T, h *harness, g *sandboxGate) {
			pod := mkPod("k", "c")
			h.send(config.ADD, pod)
			h.settle()
			failed := *pod
			failed.Status.Phase = api.PodFailed
			h.send(config.RECONCILE, &failed)
			h.settle()
			h.send(config.REMOVE, &failed)
			h.settle()
		}},
		{"refused by admission, reported failed, then removed", func(t *testing.T, h *harness, g *sandboxGate) {
			pod := mkPod("l", "c")
			h.send(config.ADD, pod)
			h.settle()
			// the agent's own Failed status comes back from the server
			failed := *pod
			failed.Status = h.status.get("l")
			h.send(config.RECONCILE, &failed)
			h.settle()
			h.send(config.REMOVE, &failed)
			h.settle()
		}},
		{"removed with no add", func(t *testing.T, h *harness, g *sandboxGate) {
			h.send(config.REMOVE, mkPod("l", "c"))
			h.settle()
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var g *sandboxGate
			h := newHarnessWith(t, func(c *Config) {
				c.Admit = func(pod *api.Pod, _ []*api.Pod) (bool, string, string) {
					if pod.UID == "l" {
						return false, "OutOfpods", "Node didn't have enough resource: pods"
					}
					return true, "", ""
				}
				g = &sandboxGate{Runtime: c.Runtime, honourCtx: true, gates: map[string]chan struct{}{}, entered: make(chan string, 1)}
				c.Runtime = g
			})
			h.rt.AddImage("busybox:1.36")
			tc.run(t, h, g)
			// housekeeping forgets finished workers
			h.advance(2 * time.Second)
			h.advance(2 * time.Second)
			var uids []string
			if tc.name != "removed with no add" {
				uids = []string{string(rune('a' + i))}
			}
			assertNoPodState(t, h, uids...)
		})
	}
}

// TestHousekeepingStopsWorkersOfUnwantedPods: a worker whose pod no source
// wants and whose removal never reached it (however it came to be) is
// stopped, cleaned up and finished by housekeeping, as the kubelet's
// SyncKnownPods does.
func TestHousekeepingStopsWorkersOfUnwantedPods(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("stray", "c")
	h.k.workers.updatePod(pod, workSync, nil, false) // behind the sources' back
	h.settle()
	if c, ok := h.newest("stray", "c"); !ok || c.State != runtime.StateRunning {
		t.Fatalf("stray pod's container = %+v, %v; want running", c, ok)
	}
	h.advance(2 * time.Second) // housekeeping stops it
	h.advance(2 * time.Second) // and forgets the finished worker
	assertNoPodState(t, h, "stray")
}
