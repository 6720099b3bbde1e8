package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	cgroupsv3 "github.com/containerd/cgroups/v3"

	"github.com/skiffhq/skiff/api"
)

// ErrNotFound is returned for a pod that has no cgroup.
var ErrNotFound = errors.New("pod cgroup not found")

// ErrBusy is returned when a cgroup to remove still holds processes.
var ErrBusy = errors.New("cgroup still has processes")

// Pod is an existing pod cgroup.
type Pod struct {
	UID  string
	QOS  api.PodQOSClass
	Path string // relative to the hierarchy root: "/skiff/burstable/pod<uid>"
}

// MemoryStats is a cgroup's memory use, as the eviction manager reads it.
type MemoryStats struct {
	Usage      uint64 // bytes charged, page cache included
	WorkingSet uint64 // Usage less inactive file pages, as the kubelet computes it
	RSS        uint64 // anonymous memory (v1 total_rss, v2 anon)
}

// driver does the file work for one cgroup version. Paths are relative to
// the hierarchy root ("/skiff/burstable/pod1").
type driver interface {
	ensure(p string, r Resources) error
	remove(p string) error
	exists(p string) bool
	children(p string) ([]string, error)
	memory(p string) (MemoryStats, error)
	cpu(p string) (uint64, error) // cumulative CPU time in nanoseconds
	oomKills(p string) (uint64, error)
	pids(p string) (uint64, error)
	memoryDir(p string) (string, bool)
}

// Manager creates, updates, lists and removes pod cgroups under one root.
// It holds no state beyond its configuration, so it is safe for
// concurrent use; callers serialise work on the same pod.
type Manager struct {
	root string
	v2   bool
	drv  driver
}

// New returns a Manager for pod cgroups under root ("/skiff") on this
// host's cgroup hierarchy: v2 when /sys/fs/cgroup is unified, else v1.
func New(root string) (*Manager, error) {
	root, err := cleanRoot(root)
	if err != nil {
		return nil, err
	}
	switch cgroupsv3.Mode() {
	case cgroupsv3.Unified:
		return &Manager{root: root, v2: true, drv: &v2driver{mountpoint: "/sys/fs/cgroup"}}, nil
	case cgroupsv3.Legacy, cgroupsv3.Hybrid:
		d, err := newV1Default()
		if err != nil {
			return nil, err
		}
		return &Manager{root: root, drv: d}, nil
	}
	return nil, errors.New("cgroups: no cgroup hierarchy is mounted at /sys/fs/cgroup")
}

// NewV1 returns a Manager on a cgroup v1 layout whose controller
// hierarchies are mounted at mountRoot/<controller> (tests pass a
// directory of their own).
func NewV1(root, mountRoot string) (*Manager, error) {
	root, err := cleanRoot(root)
	if err != nil {
		return nil, err
	}
	return &Manager{root: root, drv: newV1At(mountRoot)}, nil
}

// NewV2 returns a Manager on a cgroup v2 hierarchy mounted at mountpoint.
func NewV2(root, mountpoint string) (*Manager, error) {
	root, err := cleanRoot(root)
	if err != nil {
		return nil, err
	}
	return &Manager{root: root, v2: true, drv: &v2driver{mountpoint: mountpoint}}, nil
}

func cleanRoot(root string) (string, error) {
	if root == "" || !strings.HasPrefix(root, "/") {
		return "", fmt.Errorf("cgroups: root %q must be an absolute cgroup path", root)
	}
	c := path.Clean(root)
	if c == "/" {
		return "", errors.New("cgroups: root must not be the hierarchy's root")
	}
	return c, nil
}

// Root is the cgroup root, relative to the hierarchy ("/skiff").
func (m *Manager) Root() string { return m.root }

// V2 reports whether the Manager works on a unified (v2) hierarchy.
func (m *Manager) V2() bool { return m.v2 }

// qosDirs maps QoS classes to their directories under the root, in the
// order List walks them.
var qosDirs = []struct {
	class api.PodQOSClass
	dir   string
}{
	{api.PodQOSGuaranteed, "guaranteed"},
	{api.PodQOSBurstable, "burstable"},
	{api.PodQOSBestEffort, "besteffort"},
}

func qosDir(q api.PodQOSClass) (string, error) {
	for _, d := range qosDirs {
		if d.class == q {
			return d.dir, nil
		}
	}
	return "", fmt.Errorf("cgroups: unknown QoS class %q", q)
}

// validUID rejects UIDs that could escape the pod's directory.
func validUID(uid string) error {
	if uid == "" || len(uid) > 128 {
		return fmt.Errorf("cgroups: invalid pod uid %q", uid)
	}
	for _, c := range uid {
		ok := c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !ok {
			return fmt.Errorf("cgroups: invalid pod uid %q", uid)
		}
	}
	return nil
}

// PodPath returns the cgroup path of a pod of class qos
// ("/skiff/burstable/pod<uid>"), relative to the hierarchy root.
func (m *Manager) PodPath(qos api.PodQOSClass, uid string) (string, error) {
	if err := validUID(uid); err != nil {
		return "", err
	}
	d, err := qosDir(qos)
	if err != nil {
		return "", err
	}
	return path.Join(m.root, d, "pod"+uid), nil
}

// EnsurePod creates the pod's cgroup with limits r, or updates the limits
// of the one that exists, and returns its path. The QoS parent is created
// as needed; the best-effort parent gets the minimum CPU shares.
func (m *Manager) EnsurePod(qos api.PodQOSClass, uid string, r Resources) (string, error) {
	p, err := m.PodPath(qos, uid)
	if err != nil {
		return "", err
	}
	if existing, err := m.find(uid); err == nil && existing.QOS != qos {
		return "", fmt.Errorf("cgroups: pod %s already has a cgroup under class %s", uid, existing.QOS)
	}
	parent := path.Dir(p)
	var pr Resources
	if qos == api.PodQOSBestEffort {
		pr.CPUShares = MinShares
	}
	if err := m.drv.ensure(parent, pr); err != nil {
		return "", fmt.Errorf("create cgroup %s: %w", parent, err)
	}
	if err := m.drv.ensure(p, r); err != nil {
		return "", fmt.Errorf("create cgroup %s: %w", p, err)
	}
	return p, nil
}

// RemovePod removes the pod's cgroup and the (empty) container cgroups
// beneath it. A pod without a cgroup is not an error. A cgroup that still
// holds processes is left in place and the error wraps ErrBusy.
func (m *Manager) RemovePod(uid string) error {
	if err := validUID(uid); err != nil {
		return err
	}
	for _, d := range qosDirs {
		p := path.Join(m.root, d.dir, "pod"+uid)
		if !m.drv.exists(p) {
			continue
		}
		if err := m.drv.remove(p); err != nil {
			return fmt.Errorf("remove cgroup %s: %w", p, err)
		}
	}
	return nil
}

// Pods lists the pod cgroups that exist under the root, sorted by UID.
func (m *Manager) Pods() ([]Pod, error) {
	var out []Pod
	for _, d := range qosDirs {
		parent := path.Join(m.root, d.dir)
		names, err := m.drv.children(parent)
		if err != nil {
			return nil, fmt.Errorf("list cgroups under %s: %w", parent, err)
		}
		for _, n := range names {
			uid, ok := strings.CutPrefix(n, "pod")
			if !ok || validUID(uid) != nil {
				continue
			}
			out = append(out, Pod{UID: uid, QOS: d.class, Path: path.Join(parent, n)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

// Pod returns the pod's cgroup, or ErrNotFound.
func (m *Manager) Pod(uid string) (Pod, error) {
	if err := validUID(uid); err != nil {
		return Pod{}, err
	}
	return m.find(uid)
}

func (m *Manager) find(uid string) (Pod, error) {
	for _, d := range qosDirs {
		p := path.Join(m.root, d.dir, "pod"+uid)
		if m.drv.exists(p) {
			return Pod{UID: uid, QOS: d.class, Path: p}, nil
		}
	}
	return Pod{}, fmt.Errorf("pod %s: %w", uid, ErrNotFound)
}

// Stats returns the memory use of the pod's cgroup.
func (m *Manager) Stats(uid string) (MemoryStats, error) {
	p, err := m.Pod(uid)
	if err != nil {
		return MemoryStats{}, err
	}
	s, err := m.drv.memory(p.Path)
	if err != nil {
		return MemoryStats{}, fmt.Errorf("read memory of cgroup %s: %w", p.Path, err)
	}
	return s, nil
}

// OOMKills returns how many processes the kernel OOM-killed in the cgroup
// at p (any path, e.g. a container's cgroup beneath a pod's), from
// memory.oom_control (v1) or memory.events (v2).
func (m *Manager) OOMKills(p string) (uint64, error) {
	if p == "" || !strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
		return 0, fmt.Errorf("cgroups: invalid cgroup path %q", p)
	}
	return m.drv.oomKills(path.Clean(p))
}

// RootStats returns the memory use of the cgroup root (every pod's), the
// working set the allocatableMemory.available eviction signal reads.
func (m *Manager) RootStats() (MemoryStats, error) {
	s, err := m.drv.memory(m.root)
	if err != nil {
		return MemoryStats{}, fmt.Errorf("read memory of cgroup %s: %w", m.root, err)
	}
	return s, nil
}

// StatsOf returns the memory use of p (from Pods), without looking the
// pod up again: the eviction manager reads every pod each second.
func (m *Manager) StatsOf(p Pod) (MemoryStats, error) {
	s, err := m.drv.memory(p.Path)
	if err != nil {
		return MemoryStats{}, fmt.Errorf("read memory of cgroup %s: %w", p.Path, err)
	}
	return s, nil
}

// ProcessesOf returns how many tasks p (from Pods) holds.
func (m *Manager) ProcessesOf(p Pod) (uint64, error) {
	n, err := m.drv.pids(p.Path)
	if err != nil {
		return 0, fmt.Errorf("read pids of cgroup %s: %w", p.Path, err)
	}
	return n, nil
}

// Processes returns how many tasks (processes and threads) the pod's
// cgroup holds, from pids.current.
func (m *Manager) Processes(uid string) (uint64, error) {
	p, err := m.Pod(uid)
	if err != nil {
		return 0, err
	}
	n, err := m.drv.pids(p.Path)
	if err != nil {
		return 0, fmt.Errorf("read pids of cgroup %s: %w", p.Path, err)
	}
	return n, nil
}

// MemoryDir returns the directory of the memory controller's files for
// the cgroup root ("" for the hierarchy's own root, the whole machine):
// where the eviction manager's memory notifier arms its thresholds.
func (m *Manager) MemoryDir(hierarchyRoot bool) (string, error) {
	p := m.root
	if hierarchyRoot {
		p = "/"
	}
	d, ok := m.drv.memoryDir(p)
	if !ok {
		return "", errors.New("cgroups: no memory controller")
	}
	return d, nil
}

// Usage is a cgroup's CPU and memory use: what metrics report.
type Usage struct {
	CPUNanos uint64 // cumulative CPU time
	Memory   MemoryStats
}

// UsageOf reads the CPU and memory use of the cgroup at p (a pod's Path,
// or a container's beneath it).
func (m *Manager) UsageOf(p string) (Usage, error) {
	if p == "" || !strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
		return Usage{}, fmt.Errorf("cgroups: invalid cgroup path %q", p)
	}
	p = path.Clean(p)
	mem, err := m.drv.memory(p)
	if err != nil {
		return Usage{}, fmt.Errorf("read memory of cgroup %s: %w", p, err)
	}
	cpu, err := m.drv.cpu(p)
	if err != nil {
		return Usage{}, fmt.Errorf("read cpu of cgroup %s: %w", p, err)
	}
	return Usage{CPUNanos: cpu, Memory: mem}, nil
}

// ContainersOf lists the child cgroups of p (from Pods): one per
// container, named by its container ID, as the runtime creates them.
func (m *Manager) ContainersOf(p Pod) ([]string, error) {
	names, err := m.drv.children(p.Path)
	if err != nil {
		return nil, fmt.Errorf("list cgroups under %s: %w", p.Path, err)
	}
	return names, nil
}

// FirstProcess returns a process in p (from Pods) or in its container
// cgroups, 0 when there is none: the pod's network namespace can be read
// through it.
func (m *Manager) FirstProcess(p Pod) (int, error) {
	pid, err := m.firstProcess(p.Path)
	if err != nil || pid != 0 {
		return pid, err
	}
	kids, err := m.drv.children(p.Path)
	if err != nil {
		return 0, fmt.Errorf("list cgroups under %s: %w", p.Path, err)
	}
	for _, k := range kids {
		if pid, err := m.firstProcess(path.Join(p.Path, k)); err != nil || pid != 0 {
			return pid, err
		}
	}
	return 0, nil
}

func (m *Manager) firstProcess(p string) (int, error) {
	dir, ok := m.drv.memoryDir(p)
	if !ok {
		return 0, errors.New("cgroups: no memory controller")
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read processes of cgroup %s: %w", p, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if first == "" {
		return 0, nil
	}
	pid, err := strconv.Atoi(first)
	if err != nil {
		return 0, fmt.Errorf("parse processes of cgroup %s: %w", p, err)
	}
	return pid, nil
}
