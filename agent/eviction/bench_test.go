package eviction

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
)

// BenchmarkReaction measures, on real containerd, the time from the
// moment the pods' working set crosses allocatableMemory.available<64Mi
// (allocatable 192 MiB) to the moment the victim's processes are gone.
// A 1 ms poller of the cgroup files stamps both moments. "notifier" arms
// the cgroup memory threshold notifier; "periodic" relies on the 1 s
// cycle alone, as a kubelet with a 1 s (instead of 10 s) housekeeping
// would. Run with -benchtime=Nx: each op starts and evicts one pod.
func BenchmarkReaction(b *testing.B) {
	for _, mode := range []string{"notifier", "periodic"} {
		b.Run(mode, func(b *testing.B) { benchReaction(b, mode == "notifier") })
	}
}

func benchReaction(b *testing.B, notify bool) {
	env := newRealEnv(b, "", nil)
	cfg, err := ParseConfig(map[string]string{"eviction-hard": "allocatableMemory.available<64Mi", "eviction-pressure-transition-period": "1s"})
	if err != nil {
		b.Fatal(err)
	}
	cg := env.rt.Cgroups()
	stats, err := NewNodeStats(NodeStatsConfig{DataDir: env.podsDir, PodsDir: env.podsDir, Cgroups: cg, AllocatableMemory: func() int64 { return 192 * mi }})
	if err != nil {
		b.Fatal(err)
	}
	deps := Deps{Stats: stats, Pods: env.k}
	if notify {
		n, err := NewMemoryNotifier(cg)
		if err != nil {
			b.Fatal(err)
		}
		defer n.Close()
		deps.Notifier = n
	}
	m, err := New(cfg, deps)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(env.ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	var samples []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		uid := fmt.Sprintf("eater%d", i)
		p := realPod(uid, memoryEater)
		p.Spec.Containers[0].Resources.Requests = api.ResourceList{api.ResourceMemory: q("1Mi")} // Burstable: admitted under pressure
		env.add(p)
		crossed, gone := time.Time{}, time.Time{}
		deadline := time.Now().Add(60 * time.Second)
		for gone.IsZero() && time.Now().Before(deadline) {
			now := time.Now()
			if crossed.IsZero() {
				if st, err := cg.RootStats(); err == nil && 192*mi-int64(st.WorkingSet) < 64*mi {
					crossed = now
				}
			} else if n, err := cg.Processes(uid); err != nil || n == 0 {
				gone = now
			}
			time.Sleep(time.Millisecond) // the benchmark's own 1 ms probe
		}
		if gone.IsZero() {
			b.Fatalf("pod %s: crossed %v, never evicted", uid, crossed)
		}
		samples = append(samples, gone.Sub(crossed))
		for env.status.get(uid).Phase != api.PodFailed && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.StopTimer()
	slices.Sort(samples)
	pct := func(p float64) float64 {
		return float64(samples[min(len(samples)-1, int(p*float64(len(samples))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1000, "max-ms")
}

// BenchmarkSynchronize measures one cycle of the manager with real
// statistics (gopsutil, /proc, cgroup files) and 20 pods with cgroups:
// at the default 1 s interval, ns/op ÷ 10⁷ is the percentage of one
// core spent monitoring. Pod directories are walked every 10 s, so the
// walk's share is reported by BenchmarkDiskWalk.
func BenchmarkSynchronize(b *testing.B) {
	m, _ := benchManager(b, DefaultDiskInterval)
	ctx := context.Background()
	if _, err := m.Synchronize(ctx); err != nil {
		b.Fatal(err)
	}
	before := testenv.ProcessCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Synchronize(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// CPU (user+system) per cycle, one cycle a second
	b.ReportMetric(float64((testenv.ProcessCPU(b)-before).Nanoseconds())/float64(b.N)/1e7, "%core@1s")
}

// BenchmarkDiskWalk is BenchmarkSynchronize with every pod directory
// (a log file and an emptyDir of 100 files each) walked every cycle.
func BenchmarkDiskWalk(b *testing.B) {
	m, _ := benchManager(b, time.Nanosecond)
	ctx := context.Background()
	before := testenv.ProcessCPU(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Synchronize(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((testenv.ProcessCPU(b)-before).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
}

func benchManager(b *testing.B, diskEvery time.Duration) (*Manager, *cgroups.Manager) {
	root := fmt.Sprintf("/skiff-evbench-%d", os.Getpid())
	cg, err := cgroups.New(root)
	if err != nil {
		b.Fatal(err)
	}
	podsDir := b.TempDir()
	src := &fakePods{states: map[string]kubelet.PodState{}}
	for i := 0; i < 20; i++ {
		p := pod(fmt.Sprintf("bench%d", i), "")
		p.Spec.Volumes = []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}}}
		if _, err := cg.EnsurePod(api.PodQOSBestEffort, p.UID, cgroups.Resources{}); err != nil {
			b.Fatal(err)
		}
		dir := volumes.PodDir(podsDir, p)
		_ = os.MkdirAll(filepath.Join(dir, "c"), 0o750)
		_ = os.WriteFile(filepath.Join(dir, "c", "0.log"), make([]byte, 4096), 0o640)
		ed := filepath.Join(dir, "volumes", "empty-dir", "data")
		_ = os.MkdirAll(ed, 0o750)
		for j := 0; j < 100; j++ {
			_ = os.WriteFile(filepath.Join(ed, fmt.Sprint(j)), []byte("x"), 0o640)
		}
		src.pods = append(src.pods, p)
		src.states[p.UID] = kubelet.PodSyncing
	}
	b.Cleanup(func() {
		for _, p := range src.pods {
			_ = cg.RemovePod(p.UID)
		}
		testenv.RemoveCgroupRoot(b, root)
	})
	stats, err := NewNodeStats(NodeStatsConfig{DataDir: podsDir, PodsDir: podsDir, Cgroups: cg, DiskInterval: diskEvery,
		AllocatableMemory: func() int64 { return 8 * gi }})
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := ParseConfig(nil)
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(cfg, Deps{Stats: stats, Pods: src})
	if err != nil {
		b.Fatal(err)
	}
	return m, cg
}
