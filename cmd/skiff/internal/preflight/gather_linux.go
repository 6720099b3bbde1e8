package preflight

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Settings are the parts of skiff's configuration the checks look at.
type Settings struct {
	DataDir    string // absolute
	Containerd string // the --containerd socket
	Ports      []Port // Flag and Addr; Gather fills Err
}

// Gather collects the facts of this machine. It binds each port briefly
// and writes (then removes) a file in the data directory; nothing else
// is changed. Commands it runs for versions are bounded by ctx and a
// few seconds each.
func Gather(ctx context.Context, s Settings) Facts {
	f := Facts{ContainerdSocket: s.Containerd, DataDir: s.DataDir, Modules: map[string]ModuleState{}}
	f.KernelRelease = strings.TrimSpace(readString("/proc/sys/kernel/osrelease"))
	f.CgroupVersion, f.CgroupControllers, f.CgroupErr = cgroupFacts()
	f.Filesystems = filesystems()
	mods := moduleIndex(f.KernelRelease)
	f.OverlayModule = mods.state("overlay")
	for _, m := range []string{"bridge", "vxlan", "nf_tables"} {
		f.Modules[m] = mods.state(m)
	}
	f.Containerd = binary(ctx, "containerd", func(out string) string {
		// "containerd github.com/containerd/containerd 1.6.20~ds1 <rev>"
		if fs := strings.Fields(out); len(fs) >= 3 {
			return fs[2]
		}
		return strings.TrimSpace(out)
	})
	f.SocketAnswers = answers(s.Containerd)
	f.Runc = binary(ctx, "runc", func(out string) string {
		// "runc version 1.1.5+ds1\ncommit: …"
		first, _, _ := strings.Cut(out, "\n")
		return strings.TrimSpace(strings.TrimPrefix(first, "runc version"))
	})
	if _, err := netlink.LinkList(); err != nil {
		f.NetlinkErr = err
	}
	f.NftErr = listNftables()
	for _, p := range s.Ports {
		if l, err := net.Listen("tcp", p.Addr); err != nil {
			p.Err = err
		} else {
			l.Close()
		}
		f.Ports = append(f.Ports, p)
	}
	f.DataDirExists, f.DataDirErr = writable(s.DataDir)
	f.MemAvailable, f.MemTotal, f.MemErr = meminfo()
	f.NodeFS = disk(s.DataDir)
	image := filepath.Join(s.DataDir, "agent", "containerd", "root")
	if f.SocketAnswers && s.Containerd == "/run/containerd/containerd.sock" {
		image = "/var/lib/containerd"
	}
	f.ImageFS = disk(image)
	return f
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func cgroupFacts() (int, []string, error) {
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return 2, strings.Fields(string(b)), nil
	}
	// v1: /proc/cgroups lists "subsys hierarchy num_cgroups enabled".
	b, err := os.ReadFile("/proc/cgroups")
	if err != nil {
		return 0, nil, err
	}
	var enabled []string
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) == 4 && !strings.HasPrefix(fs[0], "#") && fs[3] == "1" {
			enabled = append(enabled, fs[0])
		}
	}
	if len(enabled) == 0 {
		return 0, nil, errors.New("/proc/cgroups lists no enabled controller")
	}
	return 1, enabled, nil
}

func filesystems() []string {
	var out []string
	for _, line := range strings.Split(readString("/proc/filesystems"), "\n") {
		if fs := strings.Fields(line); len(fs) > 0 {
			out = append(out, fs[len(fs)-1])
		}
	}
	return out
}

// modules knows the kernel's module files and built-ins.
type modules struct{ builtin, dep string }

func moduleIndex(release string) modules {
	dir := filepath.Join("/lib/modules", release)
	return modules{builtin: readString(filepath.Join(dir, "modules.builtin")), dep: readString(filepath.Join(dir, "modules.dep"))}
}

func (m modules) state(name string) ModuleState {
	if _, err := os.Stat(filepath.Join("/sys/module", name)); err == nil {
		return ModuleLoaded
	}
	ko := "/" + name + ".ko"
	if strings.Contains(m.builtin, ko) {
		return ModuleLoaded
	}
	if strings.Contains(m.dep, ko) {
		return ModuleAvailable
	}
	return ModuleMissing
}

func binary(ctx context.Context, name string, parse func(string) string) Binary {
	path, err := exec.LookPath(name)
	if err != nil {
		return Binary{}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return Binary{Path: path, Err: err}
	}
	return Binary{Path: path, Version: parse(string(out))}
}

func answers(socket string) bool {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func listNftables() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	c, err := nftables.New()
	if err != nil {
		return err
	}
	defer c.CloseLasting()
	_, err = c.ListTables()
	return err
}

// writable reports whether dir exists and whether skiff can write it, or
// create it (the nearest existing parent is writable).
func writable(dir string) (exists bool, err error) {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return true, errors.New("not a directory")
	case err == nil:
		f, err := os.CreateTemp(dir, ".skiff-check-*")
		if err != nil {
			return true, err
		}
		f.Close()
		return true, os.Remove(f.Name())
	case !errors.Is(err, os.ErrNotExist):
		return false, err
	}
	parent := nearestExisting(dir)
	if st, err := os.Stat(parent); err != nil || !st.IsDir() {
		return false, &os.PathError{Op: "create under", Path: parent, Err: unix.ENOTDIR}
	}
	if err := unix.Access(parent, unix.W_OK); err != nil {
		return false, &os.PathError{Op: "create under", Path: parent, Err: err}
	}
	return false, nil
}

func nearestExisting(p string) string {
	for {
		if _, err := os.Stat(p); err == nil || p == filepath.Dir(p) {
			return p
		}
		p = filepath.Dir(p)
	}
}

func meminfo() (avail, total int64, err error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fs[1], 10, 64)
		if err != nil {
			continue
		}
		switch fs[0] {
		case "MemAvailable:":
			avail = kb * 1024
		case "MemTotal:":
			total = kb * 1024
		}
	}
	if total == 0 {
		return 0, 0, errors.New("/proc/meminfo has no MemTotal")
	}
	return avail, total, nil
}

// disk measures the filesystem that holds path (or would: the nearest
// existing parent).
func disk(path string) Disk {
	d := Disk{Path: nearestExisting(path)}
	var st unix.Statfs_t
	if err := unix.Statfs(d.Path, &st); err != nil {
		d.Err = err
		return d
	}
	bs := int64(st.Bsize)
	d.Avail, d.Capacity = int64(st.Bavail)*bs, int64(st.Blocks)*bs
	d.InodesFree, d.Inodes = int64(st.Ffree), int64(st.Files)
	return d
}
