package cgroups

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// TestIntegrationRealHierarchy works on this host's real cgroup hierarchy
// (v1 here, v2 where unified) under a root of its own, removed at the end.
func TestIntegrationRealHierarchy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root to create cgroups")
	}
	root := fmt.Sprintf("/skiff-test-%d", os.Getpid())
	m, err := New(root)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		dirs := []string{filepath.Join("/sys/fs/cgroup", root)}
		if !m.V2() {
			ents, _ := os.ReadDir("/sys/fs/cgroup")
			for _, e := range ents {
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name(), root))
			}
		}
		for _, d := range dirs {
			if err := removeTree(d); err != nil {
				t.Errorf("cleanup %s: %v", d, err)
			}
		}
	})

	r := PodResources(500, 500, 64<<20)
	r.PIDsLimit = 64
	p, err := m.EnsurePod(api.PodQOSGuaranteed, "it1", r)
	if err != nil {
		t.Fatalf("EnsurePod: %v", err)
	}
	cpuDir, memDir := filepath.Join("/sys/fs/cgroup/cpu", p), filepath.Join("/sys/fs/cgroup/memory", p)
	want := map[string]string{
		filepath.Join(cpuDir, "cpu.shares"):                 "512",
		filepath.Join(cpuDir, "cpu.cfs_quota_us"):           "50000",
		filepath.Join(memDir, "memory.limit_in_bytes"):      "67108864",
		filepath.Join("/sys/fs/cgroup/pids", p, "pids.max"): "64",
	}
	if m.V2() {
		cpuDir = filepath.Join("/sys/fs/cgroup", p)
		memDir = cpuDir
		want = map[string]string{
			filepath.Join(cpuDir, "cpu.weight"): "20",
			filepath.Join(cpuDir, "cpu.max"):    "50000 100000",
			filepath.Join(cpuDir, "memory.max"): "67108864",
			filepath.Join(cpuDir, "pids.max"):   "64",
			// The QoS tree under the root: controllers enabled down to
			// the class, which itself has no limits.
			filepath.Join("/sys/fs/cgroup", root, "cgroup.subtree_control"):               "cpuset cpu io memory pids",
			filepath.Join("/sys/fs/cgroup", root, "guaranteed", "cgroup.subtree_control"): "cpuset cpu io memory pids",
			filepath.Join("/sys/fs/cgroup", root, "guaranteed", "memory.max"):             "max",
		}
	}
	for file, w := range want {
		if got := readTrim(t, file); got != w {
			t.Errorf("%s = %q; want %q", file, got, w)
		}
	}
	// The best-effort class gets the least CPU weight of all.
	if _, err := m.EnsurePod(api.PodQOSBestEffort, "it2", PodResources(0, 0, 0)); err != nil {
		t.Fatalf("EnsurePod(besteffort): %v", err)
	}
	file, w := filepath.Join("/sys/fs/cgroup/cpu", root, "besteffort", "cpu.shares"), "2"
	if m.V2() {
		file, w = filepath.Join("/sys/fs/cgroup", root, "besteffort", "cpu.weight"), "1"
	}
	if got := readTrim(t, file); got != w {
		t.Errorf("%s = %q; want %q", file, got, w)
	}
	if err := m.RemovePod("it2"); err != nil {
		t.Fatalf("RemovePod(it2): %v", err)
	}

	// A "container" cgroup with a process in it, as runc would make. On
	// v2 runc first enables the controllers in the pod's subtree_control
	// (the agent enables them only down to the pod's parent), so the
	// container's memory.events and pids.current exist.
	if m.V2() {
		if err := os.WriteFile(filepath.Join(memDir, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
			t.Fatalf("enable controllers below the pod: %v", err)
		}
	}
	child := filepath.Join(memDir, "c1")
	if err := os.Mkdir(child, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	defer func() {
		if !waited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	if err := os.WriteFile(filepath.Join(child, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatalf("move sleep into %s: %v", child, err)
	}
	if st, err := m.Stats("it1"); err != nil || st.Usage == 0 {
		t.Errorf("Stats(it1) = %+v, %v; want some usage", st, err)
	}
	if n, err := m.OOMKills(p + "/c1"); err != nil || n != 0 {
		t.Errorf("OOMKills = %d, %v; want 0", n, err)
	}
	pods, err := m.Pods()
	if err != nil || len(pods) != 1 || pods[0].Path != p {
		t.Errorf("Pods() = %+v, %v; want the one pod at %s", pods, err, p)
	}
	if err := m.RemovePod("it1"); !errors.Is(err, ErrBusy) {
		t.Errorf("RemovePod with a live process = %v; want ErrBusy", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waited = true
	if err := m.RemovePod("it1"); err != nil {
		t.Fatalf("RemovePod: %v", err)
	}
	if _, err := os.Stat(memDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after RemovePod (%v)", memDir, err)
	}
	if pods, err := m.Pods(); err != nil || len(pods) != 0 {
		t.Errorf("Pods() after remove = %+v, %v; want none", pods, err)
	}
	if err := m.RemovePod("it1"); err != nil {
		t.Errorf("second RemovePod = %v; want nil", err)
	}
}
