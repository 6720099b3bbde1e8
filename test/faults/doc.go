// Package faults is the network fault suite (issue 22): a server host
// and two agent hosts, each a network namespace the test makes, joined
// by veth links the test can cut, delay and make lossy. The server and
// both agents are the real product code run in-process (the server's
// listener and each agent's connections live in their host's
// namespace); each agent has its own real containerd, cgroup root and
// pod network inside its namespace.
//
// The scenarios (partition, server outage, lossy link, clock skew) check
// the same invariants after every fault: no pod runs on two nodes, no
// acknowledged write is lost, and no container, cgroup or veth is left
// without a pod that owns it.
//
// `go test ./test/faults` runs the short form (a few minutes, part of
// `make test`); SKIFF_FAULTS_LONG=1 (`make test-faults`) runs the long
// form: the server stays down for 10 real minutes, the lossy link runs
// for 3 minutes and the partition outlasts the production grace and
// eviction timeouts. Agent-local faults (kill -9, containerd restart,
// disk full) are in test/faults/local.
package faults
