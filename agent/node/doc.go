// Package node is the agent's side of joining a cluster and being a Node:
// Join exchanges a join token for a node credential (pinning the CA from
// the token's hash) and keeps it under <data-dir>/agent/; Registrar
// registers the Node with capacity and facts read by gopsutil (cpu,
// memory, the data dir's disk, kernel, OS, addresses) and heartbeats its
// conditions (Ready from the runtime and network, pressure from the
// eviction manager).
package node
