package cgroups

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestUsageOfV2Fake reads a pod's and a container's CPU and memory from
// v2 files written in a temp dir.
func TestUsageOfV2Fake(t *testing.T) {
	mnt := t.TempDir()
	m, err := NewV2("/skiff", mnt)
	if err != nil {
		t.Fatal(err)
	}
	pod := filepath.Join(mnt, "skiff/burstable/poda")
	writeFile(t, filepath.Join(pod, "memory.current"), "10000\n")
	writeFile(t, filepath.Join(pod, "memory.stat"), "anon 6000\nfile 4000\ninactive_file 3000\n")
	writeFile(t, filepath.Join(pod, "cpu.stat"), "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
	writeFile(t, filepath.Join(pod, "c1/memory.current"), "4000\n")
	writeFile(t, filepath.Join(pod, "c1/memory.stat"), "anon 2500\ninactive_file 5000\n")
	writeFile(t, filepath.Join(pod, "c1/cpu.stat"), "usage_usec 7\n")
	writeFile(t, filepath.Join(pod, "c1/cgroup.procs"), "")
	writeFile(t, filepath.Join(pod, "c2/cgroup.procs"), "4242\n4243\n")
	pods, err := m.Pods()
	if err != nil || len(pods) != 1 {
		t.Fatalf("Pods() = %v, %v; want one pod", pods, err)
	}
	u, err := m.UsageOf(pods[0].Path)
	want := Usage{CPUNanos: 1500000, Memory: MemoryStats{Usage: 10000, WorkingSet: 7000, RSS: 6000}}
	if err != nil || u != want {
		t.Errorf("UsageOf(pod) = %+v, %v; want %+v", u, err, want)
	}
	u, err = m.UsageOf(pods[0].Path + "/c1")
	want = Usage{CPUNanos: 7000, Memory: MemoryStats{Usage: 4000, WorkingSet: 0, RSS: 2500}}
	if err != nil || u != want {
		t.Errorf("UsageOf(container) = %+v, %v; want %+v (working set floors at 0)", u, err, want)
	}
	kids, err := m.ContainersOf(pods[0])
	if err != nil || !slices.Equal(kids, []string{"c1", "c2"}) {
		t.Errorf("ContainersOf = %v, %v; want [c1 c2]", kids, err)
	}
	if pid, err := m.FirstProcess(pods[0]); err != nil || pid != 4242 {
		t.Errorf("FirstProcess = %d, %v; want 4242 (from a container's cgroup)", pid, err)
	}
	for _, bad := range []string{"", "rel", "/skiff/../etc"} {
		if _, err := m.UsageOf(bad); err == nil {
			t.Errorf("UsageOf(%q) succeeded; want an error", bad)
		}
	}
	writeFile(t, filepath.Join(pod, "cpu.stat"), "user_usec 1\n")
	if _, err := m.UsageOf(pods[0].Path); err == nil {
		t.Error("UsageOf with no usage_usec succeeded; want an error")
	}
}

// TestUsageOfV1Fake reads cpuacct.usage and total_rss from v1 files.
func TestUsageOfV1Fake(t *testing.T) {
	mnt := fakeV1(t)
	m, err := NewV1("/skiff", mnt)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mnt, "memory/skiff/guaranteed/podg/memory.usage_in_bytes"), "8000\n")
	writeFile(t, filepath.Join(mnt, "memory/skiff/guaranteed/podg/memory.stat"), "rss 1\ntotal_rss 5000\ntotal_inactive_file 1000\n")
	writeFile(t, filepath.Join(mnt, "cpuacct/skiff/guaranteed/podg/cpuacct.usage"), "123456789\n")
	u, err := m.UsageOf("/skiff/guaranteed/podg")
	want := Usage{CPUNanos: 123456789, Memory: MemoryStats{Usage: 8000, WorkingSet: 7000, RSS: 5000}}
	if err != nil || u != want {
		t.Errorf("UsageOf = %+v, %v; want %+v", u, err, want)
	}
}
