package eviction

import (
	"context"
	"time"

	"github.com/skiffhq/skiff/api"
)

// StatsProvider reads the node's and the pods' resource use. The Linux
// implementation (NewNodeStats) reads gopsutil for the node and cgroup
// files for the pods; tests use a fake.
type StatsProvider interface {
	// Summary reads the node and the given pods now. A pod without
	// readings (no cgroup yet) is left out of Summary.Pods.
	Summary(ctx context.Context, pods []*api.Pod) (Summary, error)
}

// Summary is one reading. Zero capacities mean "not measured": the
// signal is not observed.
type Summary struct {
	Time time.Time
	// Memory is the node's memory: Capacity and WorkingSet in bytes.
	Memory MemoryStats
	// Allocatable is the pods' share: Capacity is the node's allocatable
	// memory, WorkingSet that of the pods' cgroup.
	Allocatable MemoryStats
	NodeFS      FsStats // the data dir's filesystem
	ImageFS     FsStats // containerd's root filesystem
	PIDs        PIDStats
	// CPUNanos is the node's CPU time since boot, all CPUs (/proc/stat);
	// 0 when not measured.
	CPUNanos uint64
	Pods     map[string]PodStats // by pod UID
}

// MemoryStats is a memory capacity and its working set (usage less
// inactive file pages), in bytes.
type MemoryStats struct {
	Capacity   int64
	WorkingSet int64
}

// FsStats is a filesystem's size and free space.
type FsStats struct {
	Capacity, Available int64 // bytes
	Inodes, InodesFree  int64
}

// PIDStats is the node's PID limit and its running processes.
type PIDStats struct {
	Max, Running int64
}

// PodStats is one pod's use.
type PodStats struct {
	// MemoryWorkingSet of the pod's cgroup, in bytes.
	MemoryWorkingSet int64
	// MemoryRSS is the cgroup's anonymous memory, in bytes.
	MemoryRSS int64
	// CPUNanos is the cgroup's CPU time (cumulative).
	CPUNanos uint64
	// Processes in the pod's cgroup.
	Processes int64
	// Containers' local storage: writable layer and logs, by name.
	Containers map[string]ContainerFs
	// EmptyDirs are the bytes in each emptyDir volume, by volume name.
	EmptyDirs map[string]int64
	// Inodes used by the pod's logs, layers and emptyDirs.
	Inodes int64
}

// ContainerFs is a container's local storage use in bytes.
type ContainerFs struct {
	Rootfs int64 // writable layer
	Logs   int64
}

// LocalStorage is the pod's whole ephemeral storage use: its
// containers' writable layers and logs, and its emptyDirs.
func (p PodStats) LocalStorage() int64 {
	var n int64
	for _, c := range p.Containers {
		n += c.Rootfs + c.Logs
	}
	for _, v := range p.EmptyDirs {
		n += v
	}
	return n
}

// observation is what a signal measured at one time.
type observation struct {
	available, capacity int64
	time                time.Time
}

// observations are the signals measured in one Summary.
type observations map[Signal]observation

// makeObservations turns s into signal observations, as the kubelet's
// makeSignalObservations does. Signals whose capacity is unknown are
// left out.
func makeObservations(s Summary) observations {
	obs := observations{}
	add := func(sig Signal, capacity, available int64) {
		if capacity > 0 {
			obs[sig] = observation{available: max(available, 0), capacity: capacity, time: s.Time}
		}
	}
	add(SignalMemoryAvailable, s.Memory.Capacity, s.Memory.Capacity-s.Memory.WorkingSet)
	add(SignalAllocatableMemoryAvailable, s.Allocatable.Capacity, s.Allocatable.Capacity-s.Allocatable.WorkingSet)
	add(SignalNodeFsAvailable, s.NodeFS.Capacity, s.NodeFS.Available)
	add(SignalNodeFsInodesFree, s.NodeFS.Inodes, s.NodeFS.InodesFree)
	add(SignalImageFsAvailable, s.ImageFS.Capacity, s.ImageFS.Available)
	add(SignalImageFsInodesFree, s.ImageFS.Inodes, s.ImageFS.InodesFree)
	add(SignalPIDAvailable, s.PIDs.Max, s.PIDs.Max-s.PIDs.Running)
	return obs
}
