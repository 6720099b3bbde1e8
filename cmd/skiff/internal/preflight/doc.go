// Package preflight is `skiff check`: it gathers facts about the machine
// (Gather: kernel, cgroups, filesystems, containerd, runc, netlink and
// kernel modules, ports, the data directory, free memory and disk) and
// judges them (Evaluate, a pure function of the facts and the eviction
// thresholds), each check giving ok, warn or fail and a fix. It reads the
// machine and binds ports only to test them; it changes nothing.
package preflight
