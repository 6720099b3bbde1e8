package eviction

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/disk"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

// DefaultDiskInterval is how often a pod's local storage is walked: disk
// use moves slowly and walking directories costs far more than reading a
// cgroup file.
const DefaultDiskInterval = 10 * time.Second

// NodeStatsConfig configures NewNodeStats.
type NodeStatsConfig struct {
	// DataDir is on the nodefs filesystem (the agent's data dir).
	DataDir string
	// ImageFSDir is on the imagefs filesystem (containerd's root); ""
	// means the data dir's.
	ImageFSDir string
	// PodsDir holds the pod directories (logs, emptyDirs); "" skips
	// pods' local storage.
	PodsDir string
	// Cgroups reads the pods' cgroups (required).
	Cgroups *cgroups.Manager
	// AllocatableMemory returns the pods' allocatable memory in bytes;
	// nil or 0 leaves allocatableMemory.available unobserved.
	AllocatableMemory func() int64
	// NodeMemory overrides the node's memory reading (gopsutil's
	// /proc/meminfo); tests give a small capacity.
	NodeMemory func(ctx context.Context) (MemoryStats, error)
	// WritableLayers returns the bytes of the writable layers of a pod's
	// containers, by container name; nil counts logs and emptyDirs only.
	WritableLayers func(ctx context.Context, podUID string) (map[string]int64, error)
	// DiskInterval bounds how often a pod's directory is walked
	// [DefaultDiskInterval].
	DiskInterval time.Duration
	// ProcStat is the kernel's CPU accounting file ["/proc/stat"].
	ProcStat string
	Clock    clock.Clock
}

// NodeStats is the Linux StatsProvider: gopsutil for the node's memory
// and filesystems, /proc for PIDs, cgroup files for pods. It is safe
// for concurrent use.
type NodeStats struct {
	cfg   NodeStatsConfig
	clock clock.Clock

	mu   sync.Mutex
	disk map[string]diskReading // by pod UID
	// refAvail is the nodefs's available bytes when the readings were
	// last dropped (staleOnChange).
	refAvail int64
}

type diskReading struct {
	at    time.Time
	stats PodStats // Containers, EmptyDirs, Inodes only
}

var _ StatsProvider = (*NodeStats)(nil)

// NewNodeStats returns a NodeStats for cfg.
func NewNodeStats(cfg NodeStatsConfig) (*NodeStats, error) {
	if cfg.Cgroups == nil || cfg.DataDir == "" {
		return nil, errors.New("eviction stats: Cgroups and DataDir are required")
	}
	if cfg.ImageFSDir == "" {
		cfg.ImageFSDir = cfg.DataDir
	}
	if cfg.DiskInterval <= 0 {
		cfg.DiskInterval = DefaultDiskInterval
	}
	if cfg.ProcStat == "" {
		cfg.ProcStat = "/proc/stat"
	}
	return &NodeStats{cfg: cfg, clock: clock.Or(cfg.Clock), disk: map[string]diskReading{}}, nil
}

// Summary implements StatsProvider.
func (n *NodeStats) Summary(ctx context.Context, pods []*api.Pod) (Summary, error) {
	s := Summary{Time: n.clock.Now(), Pods: map[string]PodStats{}}
	var err error
	if n.cfg.NodeMemory != nil {
		s.Memory, err = n.cfg.NodeMemory(ctx)
	} else {
		s.Memory, err = nodeMemory(ctx)
	}
	if err != nil {
		return Summary{}, fmt.Errorf("node memory: %w", err)
	}
	if n.cfg.AllocatableMemory != nil {
		if alloc := n.cfg.AllocatableMemory(); alloc > 0 {
			root, err := n.cfg.Cgroups.RootStats()
			if err == nil {
				s.Allocatable = MemoryStats{Capacity: alloc, WorkingSet: int64(root.WorkingSet)}
			} else if !errors.Is(err, fs.ErrNotExist) {
				return Summary{}, err
			} else {
				s.Allocatable = MemoryStats{Capacity: alloc} // no pod has run yet
			}
		}
	}
	if s.NodeFS, err = fsStats(ctx, n.cfg.DataDir); err != nil {
		return Summary{}, err
	}
	n.staleOnChange(s.NodeFS)
	if n.cfg.ImageFSDir == n.cfg.DataDir {
		s.ImageFS = s.NodeFS
	} else if s.ImageFS, err = fsStats(ctx, n.cfg.ImageFSDir); err != nil {
		return Summary{}, err
	}
	if s.PIDs, err = pidStats(); err != nil {
		return Summary{}, err
	}
	if s.CPUNanos, err = nodeCPU(n.cfg.ProcStat); err != nil {
		return Summary{}, err
	}
	cgs, err := n.cfg.Cgroups.Pods()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Summary{}, err
	}
	byUID := make(map[string]cgroups.Pod, len(cgs))
	for _, c := range cgs {
		byUID[c.UID] = c
	}
	for _, pod := range pods {
		cg, ok := byUID[pod.UID]
		if !ok {
			continue // no cgroup yet (or gone): no stats
		}
		u, err := n.cfg.Cgroups.UsageOf(cg.Path)
		if err != nil {
			continue
		}
		ps := n.diskUsage(ctx, pod, s.Time)
		ps.MemoryWorkingSet, ps.MemoryRSS, ps.CPUNanos = int64(u.Memory.WorkingSet), int64(u.Memory.RSS), u.CPUNanos
		if p, err := n.cfg.Cgroups.ProcessesOf(cg); err == nil {
			ps.Processes = int64(p)
		}
		s.Pods[pod.UID] = ps
	}
	n.forget(pods)
	return s, nil
}

// nodeMemory is capacity less working set, as the kubelet computes it:
// the working set is the memory in use (total less free) less the
// inactive file pages the kernel can drop. It reads /proc/meminfo once
// and parses the three fields it uses (every second: gopsutil read and
// split the whole file twice).
func nodeMemory(ctx context.Context) (MemoryStats, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return MemoryStats{}, fmt.Errorf("node memory: %w", err)
	}
	return parseMeminfo(b)
}

func fsStats(ctx context.Context, dir string) (FsStats, error) {
	u, err := disk.UsageWithContext(ctx, dir)
	if err != nil {
		return FsStats{}, fmt.Errorf("filesystem of %s: %w", dir, err)
	}
	return FsStats{Capacity: int64(u.Total), Available: int64(u.Free), Inodes: int64(u.InodesTotal), InodesFree: int64(u.InodesFree)}, nil
}

// pidStats reads the PID limit (kernel.pid_max, or threads-max when
// lower) and the tasks alive (the fourth field of /proc/loadavg counts
// threads too, as PIDs do), as the kubelet does.
func pidStats() (PIDStats, error) {
	limit, err := readInt("/proc/sys/kernel/pid_max")
	if err != nil {
		return PIDStats{}, err
	}
	if tm, err := readInt("/proc/sys/kernel/threads-max"); err == nil && tm < limit {
		limit = tm
	}
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return PIDStats{}, err
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return PIDStats{}, fmt.Errorf("parse /proc/loadavg: %q", b)
	}
	_, total, ok := strings.Cut(f[3], "/")
	n, err := strconv.ParseInt(total, 10, 64)
	if !ok || err != nil {
		return PIDStats{}, fmt.Errorf("parse /proc/loadavg: %q", f[3])
	}
	return PIDStats{Max: limit, Running: n}, nil
}

func readInt(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// diskUsage returns pod's local storage, walking its directory at most
// every DiskInterval.
func (n *NodeStats) diskUsage(ctx context.Context, pod *api.Pod, now time.Time) PodStats {
	if n.cfg.PodsDir == "" {
		return PodStats{}
	}
	n.mu.Lock()
	r, ok := n.disk[pod.UID]
	n.mu.Unlock()
	if ok && now.Sub(r.at) < n.cfg.DiskInterval {
		return r.stats
	}
	st := PodStats{Containers: map[string]ContainerFs{}, EmptyDirs: map[string]int64{}}
	dir := volumes.PodDir(n.cfg.PodsDir, pod)
	for _, c := range append(append([]api.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		b, i := du(filepath.Join(dir, c.Name))
		st.Containers[c.Name] = ContainerFs{Logs: b}
		st.Inodes += i
	}
	if n.cfg.WritableLayers != nil {
		if layers, err := n.cfg.WritableLayers(ctx, pod.UID); err == nil {
			for name, b := range layers {
				c := st.Containers[name]
				c.Rootfs = b
				st.Containers[name] = c
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil || v.Secret != nil || v.ConfigMap != nil {
			continue
		}
		b, i := du(filepath.Join(dir, "volumes", "empty-dir", v.Name))
		st.EmptyDirs[v.Name] = b
		st.Inodes += i
	}
	n.mu.Lock()
	n.disk[pod.UID] = diskReading{at: now, stats: st}
	n.mu.Unlock()
	return st
}

// staleOnChange drops every pod's disk reading when the node filesystem's
// available space moved by more than 1 % of its capacity since the last
// drop: a pod filling the disk fast must not be ranked on a reading from
// before it wrote (up to DiskInterval old), or the eviction picks the
// wrong pod. A quiet disk keeps the readings for their DiskInterval.
func (n *NodeStats) staleOnChange(fs FsStats) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if d := fs.Available - n.refAvail; d > fs.Capacity/100 || -d > fs.Capacity/100 {
		clear(n.disk)
		n.refAvail = fs.Available
	}
}

// forget drops the disk readings of pods no longer listed.
func (n *NodeStats) forget(pods []*api.Pod) {
	keep := make(map[string]bool, len(pods))
	for _, p := range pods {
		keep[p.UID] = true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for uid := range n.disk {
		if !keep[uid] {
			delete(n.disk, uid)
		}
	}
}

// du sums the allocated bytes and counts the inodes under dir (missing:
// zero). It does not follow symlinks and counts hard links once per
// path, as a quick estimate.
func du(dir string) (bytes, inodes int64) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: skip
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		inodes++
		if d.Type().IsRegular() {
			bytes += allocated(info)
		}
		return nil
	})
	return bytes, inodes
}
