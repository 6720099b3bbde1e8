package preflight

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/skiffhq/skiff/agent/eviction"
)

// good is a machine where every check passes.
func good() Facts {
	return Facts{
		KernelRelease:     "6.1.0-18-amd64",
		CgroupVersion:     2,
		CgroupControllers: []string{"cpuset", "cpu", "io", "memory", "hugetlb", "pids"},
		Filesystems:       []string{"ext4", "overlay"},
		Containerd:        Binary{Path: "/usr/bin/containerd", Version: "1.6.20~ds1"},
		ContainerdSocket:  "/run/containerd/containerd.sock",
		SocketAnswers:     true,
		Runc:              Binary{Path: "/usr/sbin/runc", Version: "1.1.5+ds1"},
		Modules:           map[string]ModuleState{"bridge": ModuleLoaded, "vxlan": ModuleAvailable, "nf_tables": ModuleLoaded},
		Ports:             []Port{{Flag: "listen", Addr: "0.0.0.0:7443"}, {Flag: "agent-listen", Addr: "0.0.0.0:10250"}},
		DataDir:           "/var/lib/skiff",
		DataDirExists:     true,
		MemAvailable:      2 << 30, MemTotal: 4 << 30,
		NodeFS:  Disk{Path: "/var/lib", Avail: 50 << 30, Capacity: 100 << 30, InodesFree: 900, Inodes: 1000},
		ImageFS: Disk{Path: "/var/lib/containerd", Avail: 50 << 30, Capacity: 100 << 30, InodesFree: 900, Inodes: 1000},
	}
}

func thresholds(t *testing.T, hard, soft, grace string) []eviction.Threshold {
	t.Helper()
	cfg, err := eviction.ParseConfig(map[string]string{"eviction-hard": hard, "eviction-soft": soft, "eviction-soft-grace-period": grace})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Thresholds
}

// find returns the result named name whose detail contains sub.
func find(rs []Result, name, sub string) (Result, bool) {
	for _, r := range rs {
		if r.Name == name && strings.Contains(r.Detail, sub) {
			return r, true
		}
	}
	return Result{}, false
}

func TestEvaluate(t *testing.T) {
	hard := thresholds(t, eviction.DefaultEvictionHard, "", "")
	tests := []struct {
		name       string
		edit       func(*Facts)
		thresholds []eviction.Threshold
		check, sub string // the result to look at (name, detail substring)
		want       Status
		wantFix    string
	}{
		{"good kernel", nil, hard, "kernel", "6.1.0", OK, ""},
		{"old kernel", func(f *Facts) { f.KernelRelease = "4.9.0-rpi" }, hard, "kernel", "4.9", Warn, "4.15"},
		{"ancient kernel", func(f *Facts) { f.KernelRelease = "3.2.0" }, hard, "kernel", "3.2", Fail, "3.10"},
		{"garbled kernel", func(f *Facts) { f.KernelRelease = "" }, hard, "kernel", "cannot read", Warn, "4.15"},
		{"cgroup v2 all", nil, hard, "cgroups", "v2", OK, ""},
		{"cgroup v2 no io", func(f *Facts) { f.CgroupControllers = []string{"cpu", "memory", "pids"} }, hard, "cgroups", "cpuset io", Warn, "kernel command line"},
		{"cgroup v1 no memory (Raspberry Pi)", func(f *Facts) {
			f.CgroupVersion, f.CgroupControllers = 1, []string{"cpu", "cpuacct", "pids", "cpuset", "blkio"}
		}, hard, "cgroups", "missing controllers: memory", Fail, "cgroup_enable=memory"},
		{"no cgroups", func(f *Facts) { f.CgroupVersion, f.CgroupErr = 0, errors.New("no such file") }, hard, "cgroups", "no such file", Fail, "cgroup2"},
		{"overlay loadable", func(f *Facts) { f.Filesystems, f.OverlayModule = []string{"ext4"}, ModuleAvailable }, hard, "overlayfs", "not loaded", Warn, "modprobe overlay"},
		{"no overlay", func(f *Facts) { f.Filesystems = nil }, hard, "overlayfs", "no overlay", Fail, "CONFIG_OVERLAY_FS"},
		{"containerd running", nil, hard, "containerd", "1.6.20~ds1", OK, ""},
		{"containerd managed", func(f *Facts) { f.SocketAnswers = false }, hard, "containerd", "starts its own", OK, ""},
		{"containerd missing", func(f *Facts) { f.SocketAnswers, f.Containerd = false, Binary{} }, hard, "containerd", "not on PATH", Fail, "apt-get install containerd runc"},
		{"containerd old", func(f *Facts) { f.Containerd.Version = "1.4.13" }, hard, "containerd", "1.4.13", Warn, "1.6"},
		{"runc missing", func(f *Facts) { f.Runc = Binary{} }, hard, "runc", "not on PATH", Fail, "apt-get install runc"},
		{"runc broken", func(f *Facts) { f.Runc.Err = errors.New("exit status 1") }, hard, "runc", "failed", Fail, "reinstall"},
		{"netlink blocked", func(f *Facts) { f.NetlinkErr = syscall.EPERM }, hard, "netlink", "not permitted", Fail, "netlink"},
		{"bridge missing", func(f *Facts) { f.Modules["bridge"] = ModuleMissing }, hard, "bridge", "no kernel module", Fail, "bridge module"},
		{"vxlan on demand", nil, hard, "vxlan", "on demand", OK, ""},
		{"vxlan missing", func(f *Facts) { f.Modules["vxlan"] = ModuleMissing }, hard, "vxlan", "no kernel module", Warn, "vxlan"},
		{"nftables lists", func(f *Facts) { f.Modules["nf_tables"] = ModuleMissing }, hard, "nftables", "listed", OK, ""},
		{"nftables not root", func(f *Facts) { f.NftErr = ErrNotRoot }, hard, "nftables", "not checked", Warn, "as root"},
		{"nftables missing", func(f *Facts) { f.NftErr, f.Modules["nf_tables"] = ErrNotRoot, ModuleMissing }, hard, "nftables", "no kernel module", Fail, "nf_tables"},
		{"nftables broken", func(f *Facts) { f.NftErr = syscall.EPROTONOSUPPORT }, hard, "nftables", "listing tables failed", Fail, "modprobe nf_tables"},
		{"port free", nil, hard, "port", "0.0.0.0:7443", OK, ""},
		{"port busy", func(f *Facts) { f.Ports[0].Err = syscall.EADDRINUSE }, hard, "port", "7443 (--listen) is in use", Fail, "--listen"},
		{"port privileged", func(f *Facts) { f.Ports[1].Err = syscall.EACCES }, hard, "port", "10250 (--agent-listen) needs privileges", Warn, "root"},
		{"data dir new", func(f *Facts) { f.DataDirExists = false }, hard, "data-dir", "will be created", OK, ""},
		{"data dir read-only", func(f *Facts) { f.DataDirErr = syscall.EACCES }, hard, "data-dir", "not writable", Fail, "--data-dir"},
		{"memory plenty", nil, hard, "memory", "2.0Gi of 4.0Gi", OK, ""},
		{"memory below hard", func(f *Facts) { f.MemAvailable = 50 << 20 }, hard, "memory", "50.0Mi", Fail, "--eviction-hard memory.available<100Mi"},
		{"memory near hard", func(f *Facts) { f.MemAvailable = 120 << 20 }, hard, "memory", "120.0Mi", Warn, "1.5 times"},
		{"memory below soft", nil, thresholds(t, "memory.available<100Mi", "memory.available<3Gi", "memory.available=1m"), "memory", "soft 3Gi", Warn, "soft threshold"},
		{"disk below 10%", func(f *Facts) { f.NodeFS.Avail = 5 << 30 }, hard, "nodefs", "nodefs.available=5.0Gi", Fail, "free 5.0Gi on /var/lib"},
		{"inodes low", func(f *Facts) { f.NodeFS.InodesFree = 40 }, hard, "nodefs", "inodesFree=40 inodes", Fail, "eviction-hard nodefs.inodesFree<5%"},
		{"imagefs unreadable", func(f *Facts) { f.ImageFS.Err = syscall.ENOENT }, hard, "imagefs", "cannot measure", Warn, "path"},
	}
	for _, tt := range tests {
		f := good()
		if tt.edit != nil {
			tt.edit(&f)
		}
		r, ok := find(Evaluate(f, tt.thresholds), tt.check, tt.sub)
		if !ok {
			t.Errorf("%s: no %s result with detail ~%q in %+v", tt.name, tt.check, tt.sub, Evaluate(f, tt.thresholds))
			continue
		}
		if r.Status != tt.want || !strings.Contains(r.Fix, tt.wantFix) || (tt.want == OK) != (r.Fix == "") {
			t.Errorf("%s: %s = %v %q fix %q; want %v with fix ~%q", tt.name, tt.check, r.Status, r.Detail, r.Fix, tt.want, tt.wantFix)
		}
	}
}

func TestEvaluateAllGood(t *testing.T) {
	rs := Evaluate(good(), thresholds(t, eviction.DefaultEvictionHard, "", ""))
	// 10 fixed checks, 2 ports, memory, nodefs ×2, imagefs.
	if len(rs) != 16 {
		t.Errorf("Evaluate(good) gave %d results; want 16: %+v", len(rs), rs)
	}
	for _, r := range rs {
		if r.Status != OK {
			t.Errorf("Evaluate(good): %s = %v %q; want ok", r.Name, r.Status, r.Detail)
		}
	}
	// Signals without a threshold are not judged.
	rs = Evaluate(good(), thresholds(t, "memory.available<100Mi", "", ""))
	if _, ok := find(rs, "nodefs", ""); ok {
		t.Errorf("Evaluate with no nodefs threshold judged nodefs")
	}
}

func TestFormat(t *testing.T) {
	var b bytes.Buffer
	failed := Format(&b, []Result{
		{Name: "kernel", Detail: "6.1.0"},
		{Name: "runc", Status: Fail, Detail: "not on PATH", Fix: "apt-get install runc"},
		{Name: "vxlan", Status: Warn, Detail: "no kernel module", Fix: "install it"},
	})
	want := "ok    kernel       6.1.0\n" +
		"fail  runc         not on PATH\n" +
		"                   fix: apt-get install runc\n" +
		"warn  vxlan        no kernel module\n" +
		"                   fix: install it\n" +
		"\n1 failed, 1 warnings: skiff will not work here until the failures are fixed.\n"
	if failed != 1 || b.String() != want {
		t.Errorf("Format = %d,\n%s\nwant 1,\n%s", failed, b.String(), want)
	}
	b.Reset()
	if failed := Format(&b, []Result{{Name: "kernel", Detail: "6.1.0"}}); failed != 0 || !strings.HasSuffix(b.String(), "all 1 checks passed.\n") {
		t.Errorf("Format(all ok) = %d, %q", failed, b.String())
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0"}, {1023, "1023"}, {1536, "1.5Ki"}, {100 << 20, "100.0Mi"}, {5 << 40, "5.0Ti"}} {
		if got := humanBytes(tt.n); got != tt.want {
			t.Errorf("humanBytes(%d) = %q; want %q", tt.n, got, tt.want)
		}
	}
}
