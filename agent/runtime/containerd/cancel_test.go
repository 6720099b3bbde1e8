package containerd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestIntegrationCanceledStartLeavesNoShimRealContainerd: a pod deleted
// while its container is being started cancels the start's context (the
// pod worker's). Whatever point the cancel reaches — before the shim
// starts, while runc creates the container, before or during Start —
// stopping and removing the pod afterwards must leave no shim process.
// containerd 1.6 abandons the shim of a task whose creation was
// cancelled: its process kept running, holding ~12 MB, with no task or
// container left in containerd to find it by (the soak found 67 after 40
// minutes of churn).
func TestIntegrationCanceledStartLeavesNoShimRealContainerd(t *testing.T) {
	h := newHarness(t)
	before := shimsOf(t, h.cfg.Socket)
	const pods = 24
	var wg sync.WaitGroup
	errs := make(chan error, pods)
	for i := range pods {
		sb := h.sandbox(false, "", 0)
		cfg := h.config(sb, "main", "sleep 3600")
		id, err := h.rt.CreateContainer(h.ctx, cfg)
		if err != nil {
			t.Fatalf("CreateContainer: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Cancel points spread over the start's ~10–100 ms.
			ctx, cancel := context.WithTimeout(h.ctx, time.Duration(i*4)*time.Millisecond)
			err := h.rt.StartContainer(ctx, id)
			cancel()
			if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.Logf("start %s: %v", id, err)
			}
			// The pod is deleted: the agent stops and removes it with
			// contexts of their own.
			if err := h.rt.StopContainer(h.ctx, id, 0); err != nil {
				errs <- fmt.Errorf("stop %s: %w", id, err)
				return
			}
			if err := h.rt.RemoveContainer(h.ctx, id); err != nil {
				errs <- fmt.Errorf("remove %s: %w", id, err)
				return
			}
			if err := h.rt.RemoveSandbox(h.ctx, sb.PodUID); err != nil {
				errs <- fmt.Errorf("remove sandbox %s: %w", sb.PodUID, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// A shim exits a moment after its last task is deleted.
	deadline := time.Now().Add(20 * time.Second)
	for {
		n := shimsOf(t, h.cfg.Socket) - before
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			left, _ := h.rt.ListPods(h.ctx)
			t.Fatalf("%d shims left after %d pods whose starts were cancelled were removed (the runtime lists %d pods)", n, pods, len(left))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
