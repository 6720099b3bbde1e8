// Package network gives pods their network on one node, with netlink and
// nftables and without CNI plugins.
//
// # What it owns
//
//   - The bridge skiff0, holding the gateway (the first address of the
//     node's podCIDR), and one veth pair per pod: the host end on the
//     bridge, the pod end created directly inside the pod's network
//     namespace as eth0, with the pod's address and a default route.
//   - Pod IP allocation (ipam.go): addresses of the node's /24, persisted
//     in <StateDir>/ipam.json before they are used, so a crash can neither
//     leak nor double an address; Reconcile drops what no live pod holds.
//   - The nftables table "skiff" (ip family) and nothing else of the
//     ruleset: egress masquerade for pod traffic leaving the cluster CIDR,
//     and hostPort DNAT (TCP, UDP) for traffic to the node's own addresses,
//     127.0.0.1 included. The table is rebuilt whole, atomically, from the
//     pods' records whenever they change, and at every Reconcile.
//   - The VXLAN overlay: one vxlan device per node and, per remote node,
//     the FDB, neighbour and route entries derived from its Node object
//     (podCIDR, and its InternalIP as the tunnel endpoint). The vxlan
//     device's MAC is derived from the node's podCIDR, so no node needs to
//     publish anything beyond what the Node already carries.
//   - The net.ipv4.ip_forward and the bridge's route_localnet sysctls.
//
// It must not touch other links, routes or nftables tables of the host,
// and it never changes a pod's namespace beyond its eth0.
//
// # Who calls what
//
// The kubelet calls SetUpPod after it created a pod's sandbox and
// TearDownPod before it removes it, and Reconcile at housekeeping with
// every pod it still knows. The Node watcher (WatchNodes) feeds
// SetPodCIDR and SetNodes. node.Config.NetworkReady takes Ready. Every
// method of Manager is safe for concurrent use.
//
// Tests run the Manager against a network namespace they made as the
// "host" (Config.HostNetNS), so nothing of the real host changes.
package network
