package agent

import (
	"fmt"
	"os"

	"github.com/skiffhq/skiff/agent/eviction"
	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/agent/runtime/containerd"
	"github.com/skiffhq/skiff/api"
)

// systemContainerdRoot is where Debian's containerd keeps images.
const systemContainerdRoot = "/var/lib/containerd"

// evictionManager builds the eviction manager over the node's stats
// (gopsutil, the pods' cgroups and directories), the kubelet's pods and
// the runtime's reclaim. Pressure conditions reach the server at once
// through the registrar, once there is one.
func (a *Agent) evictionManager(si node.SystemInfo, k *kubelet.Kubelet, rt *containerd.Runtime, events *deferredRecorder) (*eviction.Manager, error) {
	allocatable := node.Allocatable(node.Capacity(si, a.cfg.MaxPods), a.cfg.SystemReserved)
	mem := allocatable[api.ResourceMemory]
	imageFS := a.imageFSDir
	if imageFS == "" {
		imageFS = systemContainerdRoot
	}
	if _, err := os.Stat(imageFS); err != nil {
		// A containerd with another root (or none readable here): the
		// data dir's filesystem stands in rather than fail every cycle.
		a.log.Warn("imagefs not found; its signals read the data dir's filesystem", "dir", imageFS, "err", err)
		imageFS = ""
	}
	stats, err := eviction.NewNodeStats(eviction.NodeStatsConfig{
		DataDir: a.dir, ImageFSDir: imageFS, PodsDir: a.path("pods"), Cgroups: rt.Cgroups(),
		AllocatableMemory: func() int64 { return mem.Value() }, Clock: a.clk,
	})
	if err != nil {
		return nil, fmt.Errorf("agent: eviction stats: %w", err)
	}
	a.nodeStats = stats
	deps := eviction.Deps{
		Stats: stats, Pods: k, Reclaimer: rt, Recorder: events,
		Allocatable:        func() api.ResourceList { return allocatable },
		OnConditionsChange: a.triggerNodeStatus,
		Clock:              a.clk, Logger: a.log.With("component", "eviction"),
	}
	if n, err := eviction.NewMemoryNotifier(rt.Cgroups()); err == nil {
		deps.Notifier = n
	} else {
		a.log.Warn("no memory pressure notifier; the eviction cycle alone watches memory", "err", err)
	}
	cfg := a.cfg.Eviction
	if cfg.MaxPods == 0 {
		cfg.MaxPods = a.cfg.MaxPods
	}
	return eviction.New(cfg, deps)
}

// triggerNodeStatus sends the node status now (pressure changed).
func (a *Agent) triggerNodeStatus() {
	a.mu.Lock()
	r := a.registrar
	a.mu.Unlock()
	if r != nil {
		r.Trigger()
	}
}
