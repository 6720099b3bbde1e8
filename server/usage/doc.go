// Package usage keeps a short in-memory history of each node's resource
// figures for the dashboard's usage charts: once a minute it records, per
// node, the CPU and memory the node's pods request against what the node
// offers (allocatable), the number of pods and whether the node is Ready.
// It takes them from a Source (the leading server's scheduler cache) when
// one answers, else from a paced scan of the stored nodes and pods.
//
// These are the scheduler's bookkeeping figures, not measurements.
// "Memory available" in the dashboard is allocatable minus requested.
// What agents measure arrives in their usage reports: Measured keeps those
// (the last two per node, for rates, and an hour of node and pod rates)
// for metrics.k8s.io and the dashboard.
//
// All of it lives only in memory (an hour by default) and starts empty at
// every server start. The package reads the store and never writes.
package usage
