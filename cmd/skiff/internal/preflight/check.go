package preflight

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/skiffhq/skiff/agent/eviction"
)

// Status is a check's verdict.
type Status int

// The verdicts, in rising severity.
const (
	OK Status = iota
	Warn
	Fail
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Warn:
		return "warn"
	}
	return "fail"
}

// Result is one check's outcome. Fix says what to do; it is empty for OK.
type Result struct {
	Name   string
	Status Status
	Detail string
	Fix    string
}

// Binary is a tool found (or not) on PATH.
type Binary struct {
	Path    string // "" when not found
	Version string // as the tool prints it; "" when unknown
	Err     error  // running it for its version failed
}

// ModuleState says how a kernel feature is present.
type ModuleState int

// Module states: loaded or built in (usable now), available (a module
// file that loads on demand), missing.
const (
	ModuleMissing ModuleState = iota
	ModuleAvailable
	ModuleLoaded
)

// Port is a listen address skiff needs and the result of binding it.
type Port struct {
	Flag string // the flag that sets it, "listen" or "agent-listen"
	Addr string
	Err  error
}

// Disk is a filesystem's free space.
type Disk struct {
	Path                                string
	Avail, Capacity, InodesFree, Inodes int64
	Err                                 error
}

// Facts is what Gather found on a machine.
type Facts struct {
	KernelRelease     string
	CgroupVersion     int      // 1 or 2; 0 when neither was found
	CgroupControllers []string // available (v2) or enabled (v1)
	CgroupErr         error
	Filesystems       []string // /proc/filesystems
	OverlayModule     ModuleState
	Containerd        Binary
	ContainerdSocket  string // the --containerd socket
	SocketAnswers     bool
	Runc              Binary
	NetlinkErr        error
	Modules           map[string]ModuleState // bridge, vxlan, nf_tables
	// NftErr is the result of listing nftables tables; ErrNotRoot when
	// not run as root.
	NftErr        error
	Ports         []Port
	DataDir       string
	DataDirExists bool
	DataDirErr    error // nil when writable (or creatable)
	MemAvailable  int64
	MemTotal      int64
	MemErr        error
	NodeFS        Disk
	ImageFS       Disk
}

// ErrNotRoot marks a check that needs root to run.
var ErrNotRoot = errors.New("needs root")

// Evaluate judges facts against the eviction thresholds the agent would
// use. It is pure: the same facts give the same results, in a fixed order.
func Evaluate(f Facts, thresholds []eviction.Threshold) []Result {
	var out []Result
	out = append(out, kernel(f.KernelRelease))
	out = append(out, cgroups(f))
	out = append(out, overlay(f))
	out = append(out, containerd(f))
	out = append(out, runc(f.Runc))
	out = append(out, netlinkCheck(f.NetlinkErr))
	out = append(out, module("bridge", f.Modules["bridge"], Fail, "pod networking needs the bridge module"))
	out = append(out, module("vxlan", f.Modules["vxlan"], Warn, "pod networking across machines needs the vxlan module"))
	out = append(out, nftCheck(f))
	for _, p := range f.Ports {
		out = append(out, port(p))
	}
	out = append(out, dataDir(f))
	out = append(out, resources(f, thresholds)...)
	return out
}

// Format writes results as aligned lines, each fix indented below its
// check, then a summary line. It returns how many checks failed.
func Format(w io.Writer, results []Result) (failed int) {
	warned := 0
	for _, r := range results {
		fmt.Fprintf(w, "%-5s %-12s %s\n", r.Status, r.Name, r.Detail)
		if r.Fix != "" {
			fmt.Fprintf(w, "%-5s %-12s fix: %s\n", "", "", r.Fix)
		}
		switch r.Status {
		case Fail:
			failed++
		case Warn:
			warned++
		}
	}
	switch {
	case failed > 0:
		fmt.Fprintf(w, "\n%d failed, %d warnings: skiff will not work here until the failures are fixed.\n", failed, warned)
	case warned > 0:
		fmt.Fprintf(w, "\n%d warnings: skiff will run, with the limits above.\n", warned)
	default:
		fmt.Fprintf(w, "\nall %d checks passed.\n", len(results))
	}
	return failed
}

// kernelVersion parses "6.1.0-18-amd64" into 6, 1.
func kernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minorText := parts[1]
	if i := strings.IndexFunc(minorText, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minorText = minorText[:i]
	}
	minor, err2 := strconv.Atoi(minorText)
	return major, minor, err1 == nil && err2 == nil
}

func kernel(release string) Result {
	r := Result{Name: "kernel", Detail: release}
	major, minor, ok := kernelVersion(release)
	switch {
	case !ok:
		r.Status, r.Detail, r.Fix = Warn, fmt.Sprintf("cannot read the kernel version (%q)", release), "skiff needs Linux 4.15 or newer"
	case major < 3 || major == 3 && minor < 10:
		r.Status, r.Fix = Fail, "containerd needs Linux 3.10 or newer, skiff 4.15: upgrade the kernel"
	case major < 4 || major == 4 && minor < 15:
		r.Status, r.Fix = Warn, "skiff is tested on Linux 4.15 and newer: upgrade the kernel if pods misbehave"
	}
	return r
}

func cgroups(f Facts) Result {
	r := Result{Name: "cgroups"}
	have := map[string]bool{}
	for _, c := range f.CgroupControllers {
		have[c] = true
	}
	var need, want []string
	switch f.CgroupVersion {
	case 2:
		need, want = []string{"cpu", "memory", "pids"}, []string{"cpuset", "io"}
	case 1:
		need, want = []string{"cpu", "cpuacct", "memory", "pids"}, []string{"cpuset", "blkio"}
	default:
		r.Status, r.Detail = Fail, "no cgroup filesystem found"
		if f.CgroupErr != nil {
			r.Detail += ": " + f.CgroupErr.Error()
		}
		r.Fix = "mount cgroup2 at /sys/fs/cgroup (systemd does this at boot)"
		return r
	}
	missing, missingWanted := absent(need, have), absent(want, have)
	r.Detail = fmt.Sprintf("v%d, controllers: %s", f.CgroupVersion, strings.Join(f.CgroupControllers, " "))
	switch {
	case len(missing) > 0:
		r.Status = Fail
		r.Detail = fmt.Sprintf("v%d, missing controllers: %s", f.CgroupVersion, strings.Join(missing, " "))
		r.Fix = "enable them on the kernel command line, e.g. cgroup_enable=memory cgroup_memory=1 (in /boot/cmdline.txt on a Raspberry Pi), and reboot"
	case len(missingWanted) > 0:
		r.Status = Warn
		r.Detail = fmt.Sprintf("v%d, missing optional controllers: %s", f.CgroupVersion, strings.Join(missingWanted, " "))
		r.Fix = "CPU pinning and I/O accounting need them; enable them on the kernel command line if you need those"
	}
	return r
}

func absent(names []string, have map[string]bool) []string {
	var out []string
	for _, n := range names {
		if !have[n] {
			out = append(out, n)
		}
	}
	return out
}

func overlay(f Facts) Result {
	r := Result{Name: "overlayfs", Detail: "available"}
	for _, fs := range f.Filesystems {
		if fs == "overlay" {
			return r
		}
	}
	if f.OverlayModule == ModuleAvailable {
		r.Status, r.Detail, r.Fix = Warn, "module not loaded", "modprobe overlay (the skiff units do this at start)"
		return r
	}
	r.Status, r.Detail, r.Fix = Fail, "the kernel has no overlay filesystem", "install a kernel with CONFIG_OVERLAY_FS (containerd's snapshotter needs it)"
	return r
}

func containerd(f Facts) Result {
	r := Result{Name: "containerd"}
	b := f.Containerd
	switch {
	case b.Path == "" && !f.SocketAnswers:
		r.Status, r.Detail = Fail, fmt.Sprintf("not on PATH and no containerd answers at %s", f.ContainerdSocket)
		r.Fix = "apt-get install containerd runc (Debian, Ubuntu), dnf install containerd runc (Fedora), or set --containerd to its socket"
		return r
	case f.SocketAnswers:
		r.Detail = fmt.Sprintf("%s answers", f.ContainerdSocket)
	default:
		r.Detail = fmt.Sprintf("nothing at %s; the agent starts its own (%s)", f.ContainerdSocket, b.Path)
	}
	if b.Path == "" {
		return r
	}
	if b.Err != nil {
		r.Status, r.Fix = Warn, fmt.Sprintf("%s --version failed (%v): reinstall containerd", b.Path, b.Err)
		return r
	}
	r.Detail = "version " + b.Version + ", " + r.Detail
	if major, minor, ok := kernelVersion(b.Version); ok && (major < 1 || major == 1 && minor < 6) {
		r.Status, r.Fix = Warn, "skiff is tested with containerd 1.6 and newer: upgrade it"
	}
	return r
}

func runc(b Binary) Result {
	r := Result{Name: "runc"}
	switch {
	case b.Path == "":
		r.Status, r.Detail, r.Fix = Fail, "not on PATH", "apt-get install runc (or dnf install runc)"
	case b.Err != nil:
		r.Status, r.Detail, r.Fix = Fail, fmt.Sprintf("%s --version failed: %v", b.Path, b.Err), "reinstall runc"
	default:
		r.Detail = "version " + b.Version
		if major, minor, ok := kernelVersion(b.Version); ok && major == 1 && minor < 1 {
			r.Status, r.Fix = Warn, "skiff is tested with runc 1.1 and newer: upgrade it"
		}
	}
	return r
}

func netlinkCheck(err error) Result {
	if err != nil {
		return Result{Name: "netlink", Status: Fail, Detail: err.Error(), Fix: "skiff configures pod networks over netlink; run it on Linux with the network stack available (not in a restricted sandbox)"}
	}
	return Result{Name: "netlink", Detail: "route socket works"}
}

func module(name string, st ModuleState, missing Status, why string) Result {
	r := Result{Name: name}
	switch st {
	case ModuleLoaded:
		r.Detail = "loaded"
	case ModuleAvailable:
		r.Detail = "module loads on demand"
	default:
		r.Status, r.Detail, r.Fix = missing, "no kernel module", why+": install the kernel's modules (apt-get install linux-modules-extra-$(uname -r) on Ubuntu)"
	}
	return r
}

func nftCheck(f Facts) Result {
	r := module("nftables", f.Modules["nf_tables"], Fail, "hostPort forwarding and pod masquerading need nf_tables")
	switch {
	case f.NftErr == nil:
		return Result{Name: "nftables", Detail: "tables can be listed"}
	case errors.Is(f.NftErr, ErrNotRoot):
		if r.Status == OK {
			r.Status, r.Detail, r.Fix = Warn, r.Detail+"; not checked further", "run skiff check as root to list nftables tables"
		}
	default:
		r.Status, r.Detail, r.Fix = Fail, "listing tables failed: "+f.NftErr.Error(), "modprobe nf_tables, and run skiff as root (nftables needs CAP_NET_ADMIN)"
	}
	return r
}

func port(p Port) Result {
	r := Result{Name: "port", Detail: fmt.Sprintf("%s (--%s) is free", p.Addr, p.Flag)}
	switch {
	case p.Err == nil:
	case errors.Is(p.Err, syscall.EADDRINUSE):
		r.Status, r.Detail = Fail, fmt.Sprintf("%s (--%s) is in use", p.Addr, p.Flag)
		r.Fix = fmt.Sprintf("stop what listens there (ss -ltnp shows it; is skiff already running?) or set --%s", p.Flag)
	case errors.Is(p.Err, syscall.EACCES):
		r.Status, r.Detail, r.Fix = Warn, fmt.Sprintf("%s (--%s) needs privileges", p.Addr, p.Flag), "run skiff as root (the packages' units do)"
	default:
		r.Status, r.Detail = Fail, fmt.Sprintf("%s (--%s): %v", p.Addr, p.Flag, p.Err)
		r.Fix = fmt.Sprintf("set --%s to an address of this machine", p.Flag)
	}
	return r
}

func dataDir(f Facts) Result {
	r := Result{Name: "data-dir", Detail: f.DataDir + " is writable"}
	if !f.DataDirExists {
		r.Detail = f.DataDir + " will be created"
	}
	if f.DataDirErr != nil {
		r.Status, r.Detail = Fail, fmt.Sprintf("%s: %v", f.DataDir, f.DataDirErr)
		r.Fix = "run skiff as root, or set --data-dir to a directory you can write"
		if errors.Is(f.DataDirErr, os.ErrPermission) {
			r.Detail = f.DataDir + " is not writable"
		}
	}
	return r
}
