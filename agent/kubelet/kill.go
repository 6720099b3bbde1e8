package kubelet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
)

// minGracePeriod is the least a container gets to stop, as in the kubelet.
const minGracePeriod = 2 * time.Second

// gracePeriod is how long pod's containers get to stop: override when
// given (eviction; as in the kubelet an override may go below the
// minimum, 0 kills at once), else deletionGracePeriodSeconds, else
// terminationGracePeriodSeconds, else 30 s; never under 2 s.
func gracePeriod(pod *api.Pod, override *int64) time.Duration {
	secs := api.DefaultTerminationGracePeriodSeconds
	switch {
	case override != nil:
		return time.Duration(max(*override, 0)) * time.Second
	case pod.DeletionGracePeriodSeconds != nil:
		secs = *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		secs = *pod.Spec.TerminationGracePeriodSeconds
	}
	return max(time.Duration(secs)*time.Second, minGracePeriod)
}

// killPod stops every container of pod in parallel with its grace
// period, reports the final status, then (unless keep) removes the
// containers and the sandbox. Orphans (no spec) get Config.OrphanGrace.
func (k *Kubelet) killPod(ctx context.Context, pod *api.Pod, override *int64, keep bool) error {
	rs, err := k.pleg.fresh(ctx, pod.UID)
	if err != nil {
		return err
	}
	grace := gracePeriod(pod, override)
	orphan := len(pod.Spec.Containers) == 0
	if orphan {
		grace = k.cfg.OrphanGrace
	}
	if rs != nil {
		var wg sync.WaitGroup
		errs := make([]error, len(rs.Containers))
		for i, c := range rs.Containers {
			if c.State != runtime.StateRunning {
				continue
			}
			if !orphan {
				k.event(pod, api.EventTypeNormal, "Killing", "Stopping container %s", c.Name)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := k.rt.StopContainer(ctx, c.ID, grace); err != nil {
					errs[i] = fmt.Errorf("stop container %s: %w", c.Name, err)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	k.mu.Lock()
	delete(k.reasons, pod.UID)
	k.mu.Unlock()
	if k.cfg.Prober != nil {
		k.cfg.Prober.RemovePod(pod.UID)
	}
	if !orphan {
		if rs, err = k.pleg.fresh(ctx, pod.UID); err != nil {
			return err
		}
		st := k.generate(pod, rs, true)
		k.mu.Lock()
		ev, evicted := k.evicted[pod.UID]
		k.mu.Unlock()
		if evicted {
			st.Phase, st.Reason, st.Message = api.PodFailed, ev.Reason, ev.Message
		}
		k.sendStatus(pod, st)
	}
	if !orphan {
		// Nothing of the pod runs or will run again: its volumes go now
		// (the kubelet's SyncTerminatedPod does the same), so a pod
		// evicted for filling the disk frees it. A finished pod's exited
		// containers and logs stay until it is deleted.
		if err := k.volumes.Cleanup(volumes.PodDir(k.cfg.PodsDir, pod)); err != nil {
			return err
		}
	}
	if keep {
		return nil
	}
	return k.removePod(ctx, pod.UID)
}

// forgetPod drops the agent's per-pod bookkeeping of pod uid (container
// reasons, last status sent, eviction verdict, queued sync).
func (k *Kubelet) forgetPod(uid string) {
	k.mu.Lock()
	delete(k.reasons, uid)
	delete(k.sent, uid)
	delete(k.evicted, uid)
	k.mu.Unlock()
	k.queue.forget(uid)
}

// removePod removes every container of pod uid, then its sandbox.
func (k *Kubelet) removePod(ctx context.Context, uid string) error {
	rs, err := k.pleg.fresh(ctx, uid)
	if err != nil || rs == nil {
		return err
	}
	for _, c := range rs.Containers {
		if c.State == runtime.StateRunning {
			return fmt.Errorf("remove pod %s: container %s is still running", uid, c.Name)
		}
		if err := k.rt.RemoveContainer(ctx, c.ID); err != nil {
			return fmt.Errorf("remove container %s: %w", c.Name, err)
		}
	}
	if k.cfg.Network != nil {
		if err := k.cfg.Network.TearDownPod(ctx, uid); err != nil {
			return fmt.Errorf("tear down pod network: %w", err)
		}
	}
	if rs.Sandbox != nil {
		if err := k.rt.RemoveSandbox(ctx, uid); err != nil {
			return fmt.Errorf("remove sandbox: %w", err)
		}
	}
	// refresh the cache so housekeeping sees the pod gone
	_, err = k.pleg.fresh(ctx, uid)
	return err
}

// cleanupPod removes what is left of a terminated pod: its containers
// and sandbox; once the source removed it, also the agent's memory of it.
// The pod directory goes in housekeeping once nothing uses it.
func (k *Kubelet) cleanupPod(ctx context.Context, pod *api.Pod) error {
	if err := k.removePod(ctx, pod.UID); err != nil {
		return err
	}
	if k.desired(pod.UID) != nil {
		return nil // deleted but not yet removed: keep its status
	}
	k.forgetPod(pod.UID)
	if len(pod.Spec.Containers) > 0 {
		k.cfg.Status.RemovePod(pod.UID)
	}
	return nil
}
