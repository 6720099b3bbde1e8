// Package cgroups owns the agent's pod cgroups: one per pod under a root
// (default "/skiff"), grouped by QoS class — <root>/guaranteed/pod<uid>,
// <root>/burstable/pod<uid>, <root>/besteffort/pod<uid> — carrying the
// pod-level CPU, memory and PIDs (pids.max) limits. Containers' own cgroups are made by the
// runtime (runc) beneath a pod's cgroup; this package only removes them
// when they are empty, as part of removing the pod.
//
// Both cgroup v1 (one hierarchy per controller, as on hybrid hosts) and
// cgroup v2 (unified) are supported, through github.com/containerd/cgroups/v3.
// The resource arithmetic (MilliCPUToShares, MilliCPUToQuota,
// SharesToWeight) is pure and shared with the runtime, which applies the
// same rules to containers.
//
// The package touches only paths under its root and never moves processes.
package cgroups
