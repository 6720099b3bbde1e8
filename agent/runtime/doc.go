// Package runtime is the agent's view of a container runtime: the
// Runtime interface the sync loop drives (images, pod sandboxes —
// network namespace plus cgroup, no pause container — and containers),
// the labels that let a restarted agent rebuild its state from the
// runtime alone, and the errors it returns. agent/runtime/containerd
// implements it on containerd; agent/runtime/fake is the unit tests'
// in-memory stand-in.
package runtime
