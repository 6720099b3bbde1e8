// Package eviction is the agent's eviction manager, the kubelet's
// eviction manager made fast enough for small boards: it watches the
// node's memory, disk, inodes and PIDs, reports MemoryPressure,
// DiskPressure and PIDPressure (conditions and NoSchedule taints), first
// reclaims node-level resources (unused images, dead containers), then
// evicts at most one pod per cycle, ranked as the kubelet ranks them, and
// refuses new pods the node cannot take (Admit).
//
// The decisions are pure functions of observations and now (helpers.go,
// rank.go, admit.go); Manager.Synchronize strings them together over a
// StatsProvider, a PodSource (the kubelet) and a Reclaimer (the runtime),
// all narrow interfaces declared here. The periodic cycle (1 s by default)
// is woken early by a Notifier when memory crosses a threshold (a cgroup
// v1 memory threshold eventfd; on cgroup v2 a PSI trigger and the pods'
// root's memory.events, polled by one goroutine).
//
// The package reads cgroup and filesystem statistics and never writes a
// cgroup limit; it stops pods only through PodSource.
package eviction
