package eviction

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/api"
)

// TestIntegrationMemoryPressureEvictsBestEffortRealContainerd runs a
// Guaranteed pod and a BestEffort pod that eats memory on real
// containerd. The machine has plenty of memory, so the threshold is on
// allocatableMemory.available: the pods' cgroup root is given 192 MiB of
// allocatable memory, measured against the real working set of that
// cgroup, and the hard threshold is 64 MiB. The eater crosses it, the
// node reports MemoryPressure, the eater is evicted (Failed/Evicted)
// while the Guaranteed pod keeps running, and the condition clears after
// the transition period.
func TestIntegrationMemoryPressureEvictsBestEffortRealContainerd(t *testing.T) {
	var m *Manager
	env := newRealEnv(t, "", func(p *api.Pod, o []*api.Pod) (bool, string, string) { return m.Admit(p, o) })
	cfg, err := ParseConfig(map[string]string{
		"eviction-hard":                       "allocatableMemory.available<64Mi",
		"eviction-pressure-transition-period": "2s",
	})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := NewNodeStats(NodeStatsConfig{DataDir: env.podsDir, PodsDir: env.podsDir, Cgroups: env.rt.Cgroups(),
		AllocatableMemory: func() int64 { return 192 * mi }})
	if err != nil {
		t.Fatal(err)
	}
	notifier, err := NewMemoryNotifier(env.rt.Cgroups())
	if err != nil {
		t.Fatal(err)
	}
	defer notifier.Close()
	changes := make(chan struct{}, 16)
	m, err = New(cfg, Deps{Stats: stats, Pods: env.k, Reclaimer: env.rt, Notifier: notifier,
		OnConditionsChange: func() { changes <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(env.ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	env.add(guaranteedPod("guaranteed"))
	env.eventually("the guaranteed pod running", 30*time.Second, func() bool { return env.running("guaranteed") })
	if conds := m.Conditions(); len(conds) != 0 {
		t.Fatalf("Conditions() before the eater = %v; want none", conds)
	}
	env.add(realPod("eater", memoryEater))
	env.eventually("MemoryPressure", 30*time.Second, func() bool {
		return slices.ContainsFunc(m.Conditions(), func(c api.NodeCondition) bool { return c.Type == api.NodeMemoryPressure })
	})
	env.eventually("the eater evicted", 30*time.Second, func() bool { return env.status.get("eater").Phase == api.PodFailed })
	st := env.status.get("eater")
	if st.Reason != ReasonEvicted || !strings.Contains(st.Message, "low on resource: memory") || !strings.Contains(st.Message, "Threshold quantity: 64Mi") {
		t.Errorf("eater status = %s/%q; want Evicted naming memory and the threshold", st.Reason, st.Message)
	}
	if !env.running("guaranteed") {
		t.Errorf("guaranteed pod status = %+v; want still running", env.status.get("guaranteed"))
	}
	if ok, reason, _ := m.Admit(realPod("late", "sleep 1"), nil); ok && len(m.Conditions()) > 0 {
		t.Errorf("Admit(BestEffort) under MemoryPressure = ok; want refused (%s)", reason)
	}
	env.eventually("MemoryPressure cleared", 30*time.Second, func() bool { return len(m.Conditions()) == 0 })
	if !env.running("guaranteed") {
		t.Error("guaranteed pod stopped")
	}
	// The manager calls OnConditionsChange after it has changed what
	// Conditions returns, outside its lock: wait for the call.
	env.eventually("OnConditionsChange called for on and off", 10*time.Second, func() bool { return len(changes) >= 2 })
}

// TestIntegrationDiskPressureOnTmpfsRealContainerd puts the pods' data
// dir on a 64 MiB tmpfs; a pod filling its emptyDir drives
// nodefs.available under 50%, the node reports DiskPressure, the filler
// (the largest local storage user) is evicted while a quiet pod runs
// on, and new pods are refused.
func TestIntegrationDiskPressureOnTmpfsRealContainerd(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	podsDir := filepath.Join(dir, "pods")
	if err := os.MkdirAll(podsDir, 0o750); err != nil {
		t.Fatal(err)
	}
	var m *Manager
	env := newRealEnv(t, podsDir, func(p *api.Pod, o []*api.Pod) (bool, string, string) { return m.Admit(p, o) })
	cfg, err := ParseConfig(map[string]string{"eviction-hard": "nodefs.available<50%", "eviction-pressure-transition-period": "1s"})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := NewNodeStats(NodeStatsConfig{DataDir: dir, ImageFSDir: t.TempDir(), PodsDir: podsDir, Cgroups: env.rt.Cgroups(), DiskInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m, err = New(cfg, Deps{Stats: stats, Pods: env.k, Reclaimer: env.rt})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(env.ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	env.add(realPod("quiet", "sleep 3600"))
	env.eventually("the quiet pod running", 30*time.Second, func() bool { return env.running("quiet") })
	filler := realPod("filler", "dd if=/dev/zero of=/data/fill bs=1M count=40; sleep 3600")
	filler.Spec.Volumes = []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}}}
	filler.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "data", MountPath: "/data"}}
	env.add(filler)
	env.eventually("the filler evicted", 30*time.Second, func() bool { return env.status.get("filler").Phase == api.PodFailed })
	st := env.status.get("filler")
	if st.Reason != ReasonEvicted || !strings.Contains(st.Message, "low on resource: ephemeral-storage") {
		t.Errorf("filler status = %s/%q; want Evicted for ephemeral-storage", st.Reason, st.Message)
	}
	if !slices.ContainsFunc(m.Conditions(), func(c api.NodeCondition) bool { return c.Type == api.NodeDiskPressure }) {
		t.Errorf("Conditions() = %v; want DiskPressure", m.Conditions())
	}
	if !env.running("quiet") {
		t.Errorf("quiet pod = %+v; want running", env.status.get("quiet"))
	}
	env.add(realPod("refused", "sleep 3600"))
	env.eventually("the new pod refused", 10*time.Second, func() bool { return env.status.get("refused").Phase == api.PodFailed })
	if st := env.status.get("refused"); st.Reason != ReasonEvicted || !strings.Contains(st.Message, "DiskPressure") {
		t.Errorf("refused pod status = %s/%q; want Evicted naming DiskPressure", st.Reason, st.Message)
	}
}
