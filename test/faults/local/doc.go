// Package local is the agent-local part of the fault suite (issue 22):
// a real `skiff server` process, a real `skiff agent` process in a network
// namespace of the test's own and a containerd daemon of the test's own,
// and the faults that strike one machine: the agent killed with SIGKILL
// in the middle of a burst of pod creates, containerd restarted under a
// running agent, and the agent's disk filling up. Every scenario ends by
// checking the invariants (CheckInvariants): no pod running twice, no
// acknowledged write lost, no orphan container, cgroup or veth.
//
// The harness (Start, Cluster) is also what test/soak runs on.
//
// The short form runs in `go test ./...`; SKIFF_FAULTS_LONG=1 runs the
// long form (more rounds).
package local
