package network

import (
	"net"
	"net/netip"
	"slices"
	"sort"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/peerfeed"
)

// Peer is a remote node of the overlay: its pod network and its tunnel
// endpoint.
type Peer struct {
	Node    string
	PodCIDR netip.Prefix
	NodeIP  netip.Addr
}

// vtepAddr is the overlay address of a node's vxlan device: the network
// address of its podCIDR (10.42.3.0), as flannel does.
func vtepAddr(p netip.Prefix) netip.Addr { return p.Masked().Addr() }

// vtepMAC is the vxlan device MAC of the node holding podCIDR p:
// 0a:58 (locally administered, unicast) then the four bytes of p's
// network address. Every node derives every other node's MAC from its
// Node object alone.
func vtepMAC(p netip.Prefix) net.HardwareAddr {
	a := p.Masked().Addr().As4()
	return net.HardwareAddr{0x0a, 0x58, a[0], a[1], a[2], a[3]}
}

// peersOf derives the overlay's remote nodes from the cluster's Peers:
// every node but self with a valid IPv4 podCIDR inside cluster and an
// IPv4 InternalIP, not being deleted. Nodes claiming a podCIDR already
// claimed by a node earlier in name order are left out. It is a pure
// function; the result is sorted by node name.
func peersOf(all []peerfeed.Peer, self string, cluster netip.Prefix) []Peer {
	sorted := slices.Clone(all)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	seen := map[netip.Prefix]bool{}
	var out []Peer
	for _, n := range sorted {
		if n.Name == self || n.Deleting {
			continue
		}
		p, err := netip.ParsePrefix(n.PodCIDR)
		if err != nil || !p.Addr().Is4() || p.Masked() != p || !cluster.Contains(p.Addr()) || seen[p] {
			continue
		}
		ip, err := netip.ParseAddr(n.IP)
		if err != nil || !ip.Is4() {
			continue
		}
		seen[p] = true
		out = append(out, Peer{Node: n.Name, PodCIDR: p, NodeIP: ip})
	}
	return out
}

// PeersOf is each Node's Peer (nil Nodes left out).
func PeersOf(nodes []*api.Node) []peerfeed.Peer {
	out := make([]peerfeed.Peer, 0, len(nodes))
	for _, n := range nodes {
		if n != nil {
			out = append(out, peerfeed.Of(n))
		}
	}
	return out
}
