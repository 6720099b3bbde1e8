// Package config merges the agent's sources of desired pods — the
// server's assignment stream, static pod files and the local checkpoint —
// into one channel of PodUpdates with the kubelet's operations (ADD,
// UPDATE, DELETE, REMOVE, RECONCILE, RESTORE).
package config
