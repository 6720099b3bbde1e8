package cgroups

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// pather is what cgroup1's subsystems that live in a directory implement.
type pather interface {
	cgroup1.Subsystem
	Path(p string) string
}

// v1driver works on cgroup v1: one directory tree per controller.
type v1driver struct {
	subsystems []cgroup1.Subsystem
	// extra are hierarchies runc also makes container cgroups in on a
	// hybrid host (the v2 "unified" mount, systemd's named hierarchy)
	// that cgroup1.Default does not list; remove cleans them too.
	extra []string
}

var _ driver = (*v1driver)(nil)

func newV1Default() (*v1driver, error) {
	subs, err := cgroup1.Default()
	if err != nil {
		return nil, fmt.Errorf("cgroups: find v1 hierarchies: %w", err)
	}
	d := &v1driver{subsystems: subs}
	for _, m := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd"} {
		if st, err := os.Stat(m); err == nil && st.IsDir() {
			d.extra = append(d.extra, m)
		}
	}
	return d, nil
}

// newV1At uses the controllers skiff relies on, mounted under root, that
// exist there.
func newV1At(root string) *v1driver {
	all := []cgroup1.Subsystem{
		cgroup1.NewCpu(root), cgroup1.NewCpuacct(root), cgroup1.NewCpuset(root),
		cgroup1.NewMemory(root), cgroup1.NewPids(root),
	}
	d := &v1driver{}
	for _, s := range all {
		if p, ok := s.(pather); ok {
			if _, err := os.Stat(p.Path("/")); err == nil {
				d.subsystems = append(d.subsystems, s)
			}
		}
	}
	return d
}

func (d *v1driver) hierarchy() ([]cgroup1.Subsystem, error) { return d.subsystems, nil }

func (d *v1driver) subsystem(n cgroup1.Name) (pather, bool) {
	for _, s := range d.subsystems {
		if s.Name() == n {
			p, ok := s.(pather)
			return p, ok
		}
	}
	return nil, false
}

func (d *v1driver) ensure(p string, r Resources) error {
	if _, err := cgroup1.New(cgroup1.StaticPath(p), v1Spec(r), cgroup1.WithHierarchy(d.hierarchy)); err != nil {
		return err
	}
	// cgroup1 writes pids.max only to set a limit, never "max" to lift one.
	if s, ok := d.subsystem(cgroup1.Pids); ok {
		return os.WriteFile(filepath.Join(s.Path(p), "pids.max"), []byte(pidsMax(r.PIDsLimit)), 0o644)
	}
	return nil
}

// v1Spec turns r into the OCI resources cgroup1 writes. Unset limits are
// written as -1 so that an update can lift a limit.
func v1Spec(r Resources) *specs.LinuxResources {
	res := &specs.LinuxResources{CPU: &specs.LinuxCPU{}, Memory: &specs.LinuxMemory{}}
	if r.CPUShares > 0 {
		s := r.CPUShares
		res.CPU.Shares = &s
	}
	quota := int64(-1)
	if r.CPUQuota > 0 {
		quota = r.CPUQuota
		period := r.CPUPeriod
		if period == 0 {
			period = QuotaPeriod
		}
		res.CPU.Period = &period
	}
	res.CPU.Quota = &quota
	limit := int64(-1)
	if r.MemoryLimit > 0 {
		limit = r.MemoryLimit
	}
	res.Memory.Limit = &limit
	return res
}

func (d *v1driver) exists(p string) bool {
	for _, s := range d.subsystems {
		if ps, ok := s.(pather); ok {
			if _, err := os.Stat(ps.Path(p)); err == nil {
				return true
			}
		}
	}
	return false
}

func (d *v1driver) children(p string) ([]string, error) {
	seen := map[string]bool{}
	var out, listed []string
	for _, s := range d.subsystems {
		ps, ok := s.(pather)
		if !ok {
			continue
		}
		// Co-mounted controllers (cpu,cpuacct; net_cls,net_prio) share
		// one directory: list it once.
		dir := ps.Path(p)
		if slices.Contains(listed, dir) {
			continue
		}
		listed = append(listed, dir)
		names, err := subdirs(dir)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out, nil
}

func (d *v1driver) remove(p string) error {
	var errs []error
	for _, s := range d.subsystems {
		if ps, ok := s.(pather); ok {
			if err := removeTree(ps.Path(p)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, m := range d.extra {
		if err := removeTree(filepath.Join(m, p)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (d *v1driver) memory(p string) (MemoryStats, error) {
	s, ok := d.subsystem(cgroup1.Memory)
	if !ok {
		return MemoryStats{}, errors.New("no memory controller")
	}
	dir := s.Path(p)
	usage, err := readUint(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return MemoryStats{}, err
	}
	stat, _, err := readKeys(filepath.Join(dir, "memory.stat"), "total_inactive_file", "total_rss")
	if err != nil {
		return MemoryStats{}, err
	}
	return MemoryStats{Usage: usage, WorkingSet: workingSet(usage, stat[0]), RSS: stat[1]}, nil
}

func (d *v1driver) cpu(p string) (uint64, error) {
	s, ok := d.subsystem(cgroup1.Cpuacct)
	if !ok {
		return 0, errors.New("no cpuacct controller")
	}
	return readUint(filepath.Join(s.Path(p), "cpuacct.usage"))
}

func (d *v1driver) oomKills(p string) (uint64, error) {
	s, ok := d.subsystem(cgroup1.Memory)
	if !ok {
		return 0, errors.New("no memory controller")
	}
	kv, _, err := readKeys(filepath.Join(s.Path(p), "memory.oom_control"), "oom_kill")
	if err != nil {
		return 0, err
	}
	return kv[0], nil
}

func (d *v1driver) pids(p string) (uint64, error) {
	s, ok := d.subsystem(cgroup1.Pids)
	if !ok {
		return 0, errors.New("no pids controller")
	}
	return readUint(filepath.Join(s.Path(p), "pids.current"))
}

func (d *v1driver) memoryDir(p string) (string, bool) {
	s, ok := d.subsystem(cgroup1.Memory)
	if !ok {
		return "", false
	}
	return s.Path(p), true
}

func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}

// removeTree removes the cgroup directory dir and its descendants, deepest
// first. A cgroup directory's control files vanish with rmdir, so only
// cgroup.procs is checked: one that lists processes stops the removal
// with ErrBusy.
func removeTree(dir string) error {
	names, err := subdirs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	for _, n := range names {
		if err := removeTree(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err == nil && len(bytes.TrimSpace(procs)) > 0 {
		return fmt.Errorf("%s: %w", dir, ErrBusy)
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func readUint(file string) (uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", file, err)
	}
	return v, nil
}
