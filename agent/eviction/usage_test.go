package eviction

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/shirou/gopsutil/v4/mem"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/api"
)

func TestParseCPULine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want uint64
		ok   bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"cpu  100 2 30 9999 50 4 5 6 0 0\n", (100 + 2 + 30 + 4 + 5 + 6) * 1e7, true},
		{"cpu  1 2 3 4 5 6 7 8", (1 + 2 + 3 + 6 + 7 + 8) * 1e7, true},
		{"cpu0 1 2 3 4 5 6 7 8", 0, false},
		{"cpu 1 2", 0, false},
		{"cpu 1 x 3 4 5 6 7 8", 0, false},
	} {
		got, err := parseCPULine(tc.line)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseCPULine(%q) = %d, %v; want %d, ok=%v", tc.line, got, err, tc.want, tc.ok)
		}
	}
}

const netDev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
  eth0:    5000      20    0    0    0     0          0         0      700       7    0    0    0     0       0          0
  eth1:      10       1    0    0    0     0          0         0       20       1    0    0    0     0       0          0
`

func TestParseNetDev(t *testing.T) {
	got, err := parseNetDev([]byte(netDev))
	if want := (api.NetworkUsage{RxBytes: 5010, TxBytes: 720}); err != nil || got != want {
		t.Errorf("parseNetDev = %+v, %v; want %+v (loopback left out)", got, err, want)
	}
	for _, bad := range []string{"", "a\nb\n  eth0: 1 2 3\n", "a\nb\n eth0: x 0 0 0 0 0 0 0 1 0 0 0 0 0 0 0\n"} {
		if _, err := parseNetDev([]byte(bad)); err == nil {
			t.Errorf("parseNetDev(%q) succeeded; want an error", bad)
		}
	}
}

func writeTestFile(t *testing.T, file, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSummaryAndPodDetailsV2Fake reads CPU, RSS and containers from v2
// cgroup files written in a temp dir: the reading metrics share with
// the eviction cycle.
func TestSummaryAndPodDetailsV2Fake(t *testing.T) {
	mnt := t.TempDir()
	cg, err := cgroups.NewV2("/skiff", mnt)
	if err != nil {
		t.Fatal(err)
	}
	pod := filepath.Join(mnt, "skiff/burstable/poduid1")
	writeTestFile(t, filepath.Join(pod, "memory.current"), "9000\n")
	writeTestFile(t, filepath.Join(pod, "memory.stat"), "anon 5000\ninactive_file 1000\n")
	writeTestFile(t, filepath.Join(pod, "cpu.stat"), "usage_usec 2000000\n")
	writeTestFile(t, filepath.Join(pod, "pids.current"), "3\n")
	writeTestFile(t, filepath.Join(pod, "abc/memory.current"), "4000\n")
	writeTestFile(t, filepath.Join(pod, "abc/memory.stat"), "anon 3000\ninactive_file 500\n")
	writeTestFile(t, filepath.Join(pod, "abc/cpu.stat"), "usage_usec 1500000\n")
	writeTestFile(t, filepath.Join(pod, "sandbox/cpu.stat"), "usage_usec 1\n") // no status names it
	procStat := filepath.Join(t.TempDir(), "stat")
	writeTestFile(t, procStat, "cpu  100 0 100 5000 0 0 0 0 0 0\ncpu0 1 1 1 1 1 1 1 1\n")
	dir := t.TempDir()
	ns, err := NewNodeStats(NodeStatsConfig{DataDir: dir, Cgroups: cg, ProcStat: procStat,
		NodeMemory: func(context.Context) (MemoryStats, error) {
			return MemoryStats{Capacity: 1 << 30, WorkingSet: 1 << 20}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	p := &api.Pod{}
	p.UID, p.Name, p.Namespace = "uid1", "web", "default"
	p.Spec.Containers = []api.Container{{Name: "app"}}
	p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "app", ContainerID: "containerd://abc"}}
	s, err := ns.Summary(context.Background(), []*api.Pod{p})
	if err != nil {
		t.Fatal(err)
	}
	if s.CPUNanos != 200*1e7 {
		t.Errorf("Summary CPUNanos = %d; want %d", s.CPUNanos, uint64(200*1e7))
	}
	got := s.Pods["uid1"]
	if got.CPUNanos != 2e9 || got.MemoryWorkingSet != 8000 || got.MemoryRSS != 5000 || got.Processes != 3 {
		t.Errorf("Summary pod = %+v; want cpu 2e9, working set 8000, rss 5000, 3 processes", got)
	}
	d := ns.PodDetails(context.Background(), []*api.Pod{p})
	want := cgroups.Usage{CPUNanos: 1.5e9, Memory: cgroups.MemoryStats{Usage: 4000, WorkingSet: 3500, RSS: 3000}}
	if c := d["uid1"].Containers; len(c) != 1 || c["app"] != want {
		t.Errorf("PodDetails containers = %+v; want only app = %+v", c, want)
	}
	if d["uid1"].Network != nil {
		t.Errorf("PodDetails network = %+v; want nil (no process in the fake cgroup)", d["uid1"].Network)
	}
}

// TestDiskReadingsDroppedWhenTheDiskMoves: the cached per-pod disk
// readings (up to DiskInterval old) are dropped once the node
// filesystem's free space moved by more than 1 % of its size, so a pod
// that just filled the disk is ranked on what it wrote.
func TestDiskReadingsDroppedWhenTheDiskMoves(t *testing.T) {
	n := &NodeStats{disk: map[string]diskReading{}}
	fill := func() { n.disk["uid1"] = diskReading{stats: PodStats{Inodes: 1}} }
	steps := []struct {
		avail int64
		kept  bool
	}{
		{500_000, false}, // the first reading sets the reference
		{495_000, true},  // 0.5 % of 1,000,000: kept
		{491_000, true},  // 0.9 % from the reference: kept
		{489_000, false}, // 1.1 %: dropped
		{489_500, true},
		{500_000, false}, // freed 1.05 %: dropped too
	}
	for i, s := range steps {
		fill()
		n.staleOnChange(FsStats{Capacity: 1_000_000, Available: s.avail})
		if _, ok := n.disk["uid1"]; ok != s.kept {
			t.Fatalf("step %d (available %d): reading kept = %v; want %v", i, s.avail, ok, s.kept)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	const meminfo = "MemTotal:        8000000 kB\nMemFree:         1000000 kB\nMemAvailable:    5000000 kB\nActive(file):     900000 kB\nInactive(file):  2000000 kB\nHugePages_Total:       0\n"
	got, err := parseMeminfo([]byte(meminfo))
	if err != nil {
		t.Fatal(err)
	}
	if want := (MemoryStats{Capacity: 8000000 << 10, WorkingSet: (8000000 - 1000000 - 2000000) << 10}); got != want {
		t.Fatalf("parseMeminfo = %+v; want %+v (total, in use less inactive file)", got, want)
	}
	// Inactive file above what is in use: working set 0, not a wrap.
	if got, err := parseMeminfo([]byte("MemTotal: 100 kB\nMemFree: 90 kB\nInactive(file): 50 kB")); err != nil || got.WorkingSet != 0 || got.Capacity != 100<<10 {
		t.Fatalf("parseMeminfo = %+v, %v; want capacity 100 KiB, working set 0", got, err)
	}
	for _, bad := range []string{"MemTotal: 1 kB\nMemFree: 1 kB\n", "MemTotal: x kB\nMemFree: 1 kB\nInactive(file): 1 kB\n", ""} {
		if _, err := parseMeminfo([]byte(bad)); err == nil {
			t.Errorf("parseMeminfo(%q) = nil error; want a missing or bad field refused", bad)
		}
	}
}

// TestNodeMemoryMatchesGopsutil: the node's capacity read from
// /proc/meminfo is what gopsutil (which the agent used before) reads.
func TestNodeMemoryMatchesGopsutil(t *testing.T) {
	got, err := nodeMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	vm, err := mem.VirtualMemory()
	if err != nil {
		t.Fatal(err)
	}
	if got.Capacity != int64(vm.Total) || got.WorkingSet <= 0 || got.WorkingSet > got.Capacity {
		t.Fatalf("nodeMemory = %+v; want capacity %d (gopsutil's total) and a working set within it", got, vm.Total)
	}
}
