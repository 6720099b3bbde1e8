// Package usage sends the node's measured use to the server: every
// Interval (15 s) it takes the eviction manager's latest reading (node
// memory, filesystem, CPU; each pod's cgroup CPU, working set and RSS),
// adds the containers' cgroups and the pods' network counters, and POSTs
// one api.UsageReport to /api/v1/skiff/nodes/{name}/stats. It also keeps
// the latest report for the agent's own /metrics.
//
// It reads through eviction.NodeStats and never reads a cgroup file the
// eviction cycle has just read. It writes nothing on the node.
package usage
