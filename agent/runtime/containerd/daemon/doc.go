// Package daemon runs a containerd daemon of skiff's own: the agent's
// managed containerd (started when no containerd socket exists and a
// containerd binary is on PATH, with everything under
// <data-dir>/agent/containerd/) and the test environment's throwaway
// daemons (internal/testenv).
//
// WriteConfig writes a minimal config: its own root, state and sockets,
// the CRI plugin and the snapshotters and tracing skiff does not use
// disabled. Start runs one daemon and returns once it answers; Supervise
// keeps one running, restarting it with backoff, until its context ends.
// Stopping a daemon leaves its shims and containers running, as
// containerd itself does: a new daemon on the same state adopts them.
package daemon
