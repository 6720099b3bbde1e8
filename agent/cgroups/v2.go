package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/containerd/cgroups/v3/cgroup2"
)

// v2driver works on the unified hierarchy mounted at mountpoint.
type v2driver struct {
	mountpoint string
}

var _ driver = (*v2driver)(nil)

// v2Controllers are the controllers pod and container cgroups need; those
// the hierarchy offers are enabled in every ancestor's subtree_control.
var v2Controllers = []string{"cpu", "cpuset", "memory", "pids", "io"}

func (d *v2driver) dir(p string) string { return filepath.Join(d.mountpoint, p) }

func (d *v2driver) ensure(p string, r Resources) error {
	m, err := cgroup2.NewManager(d.mountpoint, p, &cgroup2.Resources{})
	if err != nil {
		return err
	}
	avail, err := m.RootControllers()
	if err != nil {
		return fmt.Errorf("read root controllers: %w", err)
	}
	if want := intersect(v2Controllers, avail); len(want) > 0 {
		if err := m.ToggleControllers(want, cgroup2.Enable); err != nil {
			return err
		}
	}
	for _, v := range v2Values(r) {
		if err := writeControl(filepath.Join(d.dir(p), v.file), v.value); err != nil {
			return err
		}
	}
	return nil
}

type v2Value struct{ file, value string }

// v2Values are the control files to write for r: cpu.weight when shares
// are set, cpu.max, memory.max and pids.max always ("max" lifts a limit).
func v2Values(r Resources) []v2Value {
	var out []v2Value
	if r.CPUShares > 0 {
		out = append(out, v2Value{"cpu.weight", strconv.FormatUint(SharesToWeight(r.CPUShares), 10)})
	}
	period := r.CPUPeriod
	if period == 0 {
		period = QuotaPeriod
	}
	quota := "max"
	if r.CPUQuota > 0 {
		quota = strconv.FormatInt(r.CPUQuota, 10)
	}
	out = append(out, v2Value{"cpu.max", quota + " " + strconv.FormatUint(period, 10)})
	mem := "max"
	if r.MemoryLimit > 0 {
		mem = strconv.FormatInt(r.MemoryLimit, 10)
	}
	out = append(out, v2Value{"memory.max", mem}, v2Value{"pids.max", pidsMax(r.PIDsLimit)})
	return out
}

func intersect(want, have []string) []string {
	var out []string
	for _, w := range want {
		for _, h := range have {
			if w == h {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// writeControl writes an existing control file (O_TRUNC, never creating
// one: a missing file means the controller is not enabled here).
func writeControl(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(value); err != nil {
		f.Close()
		return fmt.Errorf("write %q to %s: %w", value, file, err)
	}
	return f.Close()
}

func (d *v2driver) exists(p string) bool {
	_, err := os.Stat(d.dir(p))
	return err == nil
}

func (d *v2driver) children(p string) ([]string, error) { return subdirs(d.dir(p)) }

func (d *v2driver) remove(p string) error { return removeTree(d.dir(p)) }

func (d *v2driver) memory(p string) (MemoryStats, error) {
	usage, err := readUint(filepath.Join(d.dir(p), "memory.current"))
	if err != nil {
		return MemoryStats{}, err
	}
	stat, _, err := readKeys(filepath.Join(d.dir(p), "memory.stat"), "inactive_file", "anon")
	if err != nil {
		return MemoryStats{}, err
	}
	return MemoryStats{Usage: usage, WorkingSet: workingSet(usage, stat[0]), RSS: stat[1]}, nil
}

// cpu reads usage_usec from cpu.stat, which v2 keeps even where the cpu
// controller is not enabled.
func (d *v2driver) cpu(p string) (uint64, error) {
	kv, found, err := readKeys(filepath.Join(d.dir(p), "cpu.stat"), "usage_usec")
	if err != nil {
		return 0, err
	}
	usec := kv[0]
	if !found[0] {
		return 0, fmt.Errorf("%s: no usage_usec", filepath.Join(d.dir(p), "cpu.stat"))
	}
	return usec * 1000, nil
}

func (d *v2driver) oomKills(p string) (uint64, error) {
	kv, _, err := readKeys(filepath.Join(d.dir(p), "memory.events"), "oom_kill")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	if err != nil {
		return 0, err
	}
	return kv[0], nil
}

func (d *v2driver) pids(p string) (uint64, error) {
	return readUint(filepath.Join(d.dir(p), "pids.current"))
}

func (d *v2driver) memoryDir(p string) (string, bool) { return d.dir(p), true }
