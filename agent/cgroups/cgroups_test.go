package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

func readTrim(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func writeFile(t *testing.T, file, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeV1 lays out a cgroup v1 mount tree in a temporary directory.
func fakeV1(t *testing.T) string {
	root := t.TempDir()
	for _, c := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids"} {
		if err := os.MkdirAll(filepath.Join(root, c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, "cpuset", "cpuset.cpus"), "0-1")
	writeFile(t, filepath.Join(root, "cpuset", "cpuset.mems"), "0")
	return root
}

func TestPodPath(t *testing.T) {
	m, err := NewV1("/skiff/", fakeV1(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		qos     api.PodQOSClass
		uid     string
		want    string
		wantErr bool
	}{
		{api.PodQOSGuaranteed, "abc-1", "/skiff/guaranteed/podabc-1", false},
		{api.PodQOSBurstable, "abc", "/skiff/burstable/podabc", false},
		{api.PodQOSBestEffort, "x_y", "/skiff/besteffort/podx_y", false},
		{"Platinum", "abc", "", true},
		{api.PodQOSBurstable, "", "", true},
		{api.PodQOSBurstable, "../etc", "", true},
		{api.PodQOSBurstable, "a/b", "", true},
	} {
		got, err := m.PodPath(tc.qos, tc.uid)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("PodPath(%q, %q) = %q, %v; want %q, error %v", tc.qos, tc.uid, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestNewRejectsBadRoot(t *testing.T) {
	for _, root := range []string{"", "skiff", "/", "//"} {
		if _, err := NewV1(root, t.TempDir()); err == nil {
			t.Errorf("NewV1(%q) succeeded; want an error", root)
		}
	}
}

func TestV1FakeEnsureAndList(t *testing.T) {
	mnt := fakeV1(t)
	m, err := NewV1("/skiff", mnt)
	if err != nil {
		t.Fatal(err)
	}
	r := PodResources(500, 500, 64<<20)
	r.PIDsLimit = 1024
	p, err := m.EnsurePod(api.PodQOSGuaranteed, "u1", r)
	if err != nil {
		t.Fatalf("EnsurePod: %v", err)
	}
	if p != "/skiff/guaranteed/podu1" {
		t.Errorf("EnsurePod path = %q", p)
	}
	for file, want := range map[string]string{
		"cpu/skiff/guaranteed/podu1/cpu.shares":               "512",
		"cpu/skiff/guaranteed/podu1/cpu.cfs_quota_us":         "50000",
		"cpu/skiff/guaranteed/podu1/cpu.cfs_period_us":        "100000",
		"memory/skiff/guaranteed/podu1/memory.limit_in_bytes": "67108864",
		"cpuset/skiff/guaranteed/podu1/cpuset.cpus":           "0-1",
		"pids/skiff/guaranteed/podu1/pids.max":                "1024",
	} {
		if got := readTrim(t, filepath.Join(mnt, file)); got != want {
			t.Errorf("%s = %q; want %q", file, got, want)
		}
	}
	// Update lifts the limits.
	if _, err := m.EnsurePod(api.PodQOSGuaranteed, "u1", PodResources(100, 0, 0)); err != nil {
		t.Fatalf("EnsurePod update: %v", err)
	}
	for file, want := range map[string]string{
		"cpu/skiff/guaranteed/podu1/cpu.shares":               "102",
		"cpu/skiff/guaranteed/podu1/cpu.cfs_quota_us":         "-1",
		"memory/skiff/guaranteed/podu1/memory.limit_in_bytes": "-1",
		"pids/skiff/guaranteed/podu1/pids.max":                "max",
	} {
		if got := readTrim(t, filepath.Join(mnt, file)); got != want {
			t.Errorf("after update %s = %q; want %q", file, got, want)
		}
	}
	if _, err := m.EnsurePod(api.PodQOSBestEffort, "u2", PodResources(0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(mnt, "cpu/skiff/besteffort/cpu.shares")); got != "2" {
		t.Errorf("besteffort parent cpu.shares = %q; want 2", got)
	}
	if _, err := m.EnsurePod(api.PodQOSBurstable, "u2", PodResources(0, 0, 0)); err == nil {
		t.Error("EnsurePod of u2 under a second class succeeded; want an error")
	}
	pods, err := m.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 || pods[0] != (Pod{"u1", api.PodQOSGuaranteed, "/skiff/guaranteed/podu1"}) ||
		pods[1] != (Pod{"u2", api.PodQOSBestEffort, "/skiff/besteffort/podu2"}) {
		t.Errorf("Pods() = %+v", pods)
	}
	if _, err := m.Pod("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Pod(nope) error = %v; want ErrNotFound", err)
	}
	writeFile(t, filepath.Join(mnt, "memory/skiff/guaranteed/podu1/memory.usage_in_bytes"), "1000\n")
	writeFile(t, filepath.Join(mnt, "memory/skiff/guaranteed/podu1/memory.stat"), "cache 10\ntotal_inactive_file 300\n")
	st, err := m.Stats("u1")
	if err != nil {
		t.Fatal(err)
	}
	if st != (MemoryStats{Usage: 1000, WorkingSet: 700}) {
		t.Errorf("Stats(u1) = %+v; want usage 1000, working set 700", st)
	}
	writeFile(t, filepath.Join(mnt, "memory/skiff/guaranteed/podu1/c1/memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
	if n, err := m.OOMKills("/skiff/guaranteed/podu1/c1"); err != nil || n != 3 {
		t.Errorf("OOMKills = %d, %v; want 3", n, err)
	}
	if _, err := m.OOMKills("relative"); err == nil {
		t.Error("OOMKills(relative) succeeded; want an error")
	}
}

// fakeV2 lays out a unified hierarchy with the files the kernel would
// provide for the pod at p.
func fakeV2(t *testing.T, pods ...string) string {
	mnt := t.TempDir()
	writeFile(t, filepath.Join(mnt, "cgroup.controllers"), "cpuset cpu io memory pids")
	for _, p := range pods {
		dirs := []string{"/skiff", filepath.Dir(p), p}
		for _, d := range dirs {
			for _, f := range []string{"cgroup.subtree_control", "cpu.weight", "cpu.max", "memory.max", "pids.max", "cgroup.procs"} {
				writeFile(t, filepath.Join(mnt, d, f), "")
			}
		}
	}
	writeFile(t, filepath.Join(mnt, "cgroup.subtree_control"), "")
	return mnt
}

func TestV2FakeEnsure(t *testing.T) {
	mnt := fakeV2(t, "/skiff/burstable/podu1")
	m, err := NewV2("/skiff", mnt)
	if err != nil {
		t.Fatal(err)
	}
	r := PodResources(1000, 2000, 1<<30)
	r.PIDsLimit = 512
	if _, err := m.EnsurePod(api.PodQOSBurstable, "u1", r); err != nil {
		t.Fatalf("EnsurePod: %v", err)
	}
	for file, want := range map[string]string{
		"skiff/burstable/podu1/pids.max":   "512",
		"skiff/burstable/pids.max":         "max",
		"skiff/burstable/podu1/cpu.weight": "39",
		"skiff/burstable/podu1/cpu.max":    "200000 100000",
		"skiff/burstable/podu1/memory.max": "1073741824",
		"skiff/burstable/cpu.max":          "max 100000",
		"skiff/cgroup.subtree_control":     "+cpu +cpuset +memory +pids +io",
		"cgroup.subtree_control":           "+cpu +cpuset +memory +pids +io",
	} {
		if got := readTrim(t, filepath.Join(mnt, file)); got != want {
			t.Errorf("%s = %q; want %q", file, got, want)
		}
	}
	pods, err := m.Pods()
	if err != nil || len(pods) != 1 || pods[0].UID != "u1" || pods[0].QOS != api.PodQOSBurstable {
		t.Errorf("Pods() = %+v, %v", pods, err)
	}
	writeFile(t, filepath.Join(mnt, "skiff/burstable/podu1/memory.current"), "5000")
	writeFile(t, filepath.Join(mnt, "skiff/burstable/podu1/memory.stat"), "anon 4000\ninactive_file 1000\n")
	if st, err := m.Stats("u1"); err != nil || st != (MemoryStats{5000, 4000, 4000}) {
		t.Errorf("Stats(u1) = %+v, %v; want {5000 4000 4000}", st, err)
	}
	writeFile(t, filepath.Join(mnt, "skiff/burstable/podu1/c/memory.events"), "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n")
	if n, err := m.OOMKills("/skiff/burstable/podu1/c"); err != nil || n != 1 {
		t.Errorf("OOMKills = %d, %v; want 1", n, err)
	}
	// Removal on a plain directory tree: the fake's control files are
	// real files, so only check that cgroup.procs is honoured.
	if err := os.RemoveAll(filepath.Join(mnt, "skiff/burstable/podu1/c")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mnt, "skiff/burstable/podu1/cgroup.procs"), "42\n")
	if err := m.RemovePod("u1"); !errors.Is(err, ErrBusy) {
		t.Errorf("RemovePod with a process = %v; want ErrBusy", err)
	}
}
