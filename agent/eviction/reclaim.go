package eviction

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// Reclaimer is what node-level reclaim needs of the runtime:
// agent/runtime.Runtime has it.
type Reclaimer interface {
	ListImages(ctx context.Context) ([]runtime.Image, error)
	RemoveImage(ctx context.Context, ref string) error
	ListPods(ctx context.Context) ([]runtime.PodStatus, error)
	RemoveContainer(ctx context.Context, id string) error
}

// Notifier wakes the cycle when memory crosses a threshold.
type Notifier interface {
	// C receives a value when a threshold armed with Arm was crossed.
	C() <-chan struct{}
	// Arm asks for a wake-up when sig's available amount, out of
	// capacity, falls below threshold (bytes). Called every cycle with
	// the latest figures; implementations re-arm only on change.
	Arm(sig Signal, capacity, threshold int64) error
}

// reclaimNodeLevel frees what the node holds for no pod before any pod
// is evicted for disk: dead containers, then unused images (oldest
// first, until enough is freed). It re-measures and reports whether the
// node's disk thresholds are resolved past their min-reclaim. Memory and
// PIDs have nothing to reclaim at node level.
func (m *Manager) reclaimNodeLevel(ctx context.Context, t Threshold, obs observations, infos []kubelet.PodInfo, pods []*api.Pod) bool {
	r := signalResource(t.Signal)
	if m.deps.Reclaimer == nil || (r != resourceStorage && r != resourceInodes) {
		return false
	}
	need := needToReclaim(t, obs)
	freed, err := m.reclaim(ctx, infos, r, need)
	if err != nil {
		m.log.Warn("node-level reclaim", "err", err)
	}
	if freed == 0 && err == nil {
		return false // nothing to free: re-measuring changes nothing
	}
	s, err := m.deps.Stats.Summary(ctx, pods)
	if err != nil {
		m.log.Warn("re-measure after reclaim", "err", err)
		return false
	}
	var disk []Threshold
	for _, th := range m.cfg.Thresholds {
		if signalCondition(th.Signal) == api.NodeDiskPressure {
			disk = append(disk, th)
		}
	}
	left := thresholdsMet(disk, makeObservations(s), true)
	m.log.Info("node-level reclaim done", "signal", t.Signal, "freedObjects", freed, "stillMet", len(left))
	if len(left) == 0 && m.deps.Recorder != nil {
		m.deps.Recorder.NodeEventf(api.EventTypeNormal, "FreeDiskSpace", "Reclaimed node-level resources for %s: %d images or containers removed", t.Signal, freed)
	}
	return len(left) == 0
}

// reclaim removes dead containers, then unused images until need bytes
// are freed (all unused images for inodes). It returns how many objects
// it removed.
func (m *Manager) reclaim(ctx context.Context, infos []kubelet.PodInfo, r resource, need int64) (int, error) {
	rt := m.deps.Reclaimer
	rpods, err := rt.ListPods(ctx)
	if err != nil {
		return 0, err
	}
	states := map[string]kubelet.PodState{}
	for _, i := range infos {
		states[i.Pod.UID] = i.State
	}
	var errs []error
	removed := 0
	for _, id := range deadContainers(rpods, states) {
		if err := rt.RemoveContainer(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	imgs, err := rt.ListImages(ctx)
	if err != nil {
		return removed, errors.Join(append(errs, err)...)
	}
	var freed int64
	for _, img := range unusedImages(imgs, rpods) {
		if r == resourceStorage && freed >= need {
			break
		}
		if err := rt.RemoveImage(ctx, img.Ref); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		m.log.Info("removed unused image", "image", img.Ref, "size", img.Size)
		freed += img.Size
		removed++
	}
	return removed, errors.Join(errs...)
}

// deadContainers are the exited containers the agent no longer needs:
// every one of a terminated pod, and each instance but the newest of a
// running pod's container (the newest carries the restart count).
// Pods the kubelet does not know are housekeeping's business.
func deadContainers(rpods []runtime.PodStatus, states map[string]kubelet.PodState) []string {
	var out []string
	for _, p := range rpods {
		st, known := states[p.UID]
		if !known {
			continue
		}
		newest := map[string]int{}
		for _, c := range p.Containers {
			k := key(c)
			if n, ok := newest[k]; !ok || c.RestartCount > n {
				newest[k] = c.RestartCount
			}
		}
		for _, c := range p.Containers {
			if c.State != runtime.StateExited {
				continue
			}
			if st == kubelet.PodTerminated || c.RestartCount < newest[key(c)] {
				out = append(out, c.ID)
			}
		}
	}
	slices.Sort(out)
	return out
}

func key(c runtime.ContainerStatus) string {
	if c.Init {
		return "init/" + c.Name
	}
	return "app/" + c.Name
}

// unusedImages are the images no container (in any state) uses, oldest
// first (by creation time, then ref).
func unusedImages(imgs []runtime.Image, rpods []runtime.PodStatus) []runtime.Image {
	used := map[string]bool{}
	for _, p := range rpods {
		for _, c := range p.Containers {
			if c.Image != "" {
				used[c.Image] = true
			}
			if c.ImageID != "" {
				used[c.ImageID] = true
			}
		}
	}
	var out []runtime.Image
	for _, img := range imgs {
		if !used[img.Ref] && !used[img.ID] {
			out = append(out, img)
		}
	}
	slices.SortStableFunc(out, func(a, b runtime.Image) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.Ref, b.Ref))
	})
	return out
}
