package network

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// vxlanSpec is the vxlan device a node should have.
type vxlanSpec struct {
	name    string
	vni     int
	port    int
	mtu     int
	local   netip.Addr
	podCIDR netip.Prefix
}

// ensureVXLAN makes the node's vxlan device as spec says (replacing one
// that differs), with its MAC derived from the podCIDR and the podCIDR's
// network address as its only address, and brings it up.
func ensureVXLAN(h *netlink.Handle, spec vxlanSpec) (netlink.Link, error) {
	mac := vtepMAC(spec.podCIDR)
	l, err := h.LinkByName(spec.name)
	if err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("find vxlan %s: %w", spec.name, err)
	}
	if err == nil {
		vx, ok := l.(*netlink.Vxlan)
		same := ok && vx.VxlanId == spec.vni && vx.Port == spec.port && vx.SrcAddr.Equal(net.IP(spec.local.AsSlice())) &&
			bytes.Equal(vx.HardwareAddr, mac)
		if !same {
			if err := h.LinkDel(l); err != nil {
				return nil, fmt.Errorf("replace vxlan %s: %w", spec.name, err)
			}
			l = nil
		}
	}
	if l == nil {
		vx := &netlink.Vxlan{
			LinkAttrs: netlink.LinkAttrs{Name: spec.name, MTU: spec.mtu, HardwareAddr: mac},
			VxlanId:   spec.vni,
			SrcAddr:   net.IP(spec.local.AsSlice()),
			Port:      spec.port,
			Learning:  false,
		}
		if err := h.LinkAdd(vx); err != nil {
			return nil, fmt.Errorf("create vxlan %s: %w", spec.name, err)
		}
		if l, err = h.LinkByName(spec.name); err != nil {
			return nil, fmt.Errorf("find vxlan %s: %w", spec.name, err)
		}
	}
	if err := setOnlyAddr(h, l, hostNet(vtepAddr(spec.podCIDR), 32)); err != nil {
		return nil, fmt.Errorf("vxlan %s: %w", spec.name, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return nil, fmt.Errorf("bring vxlan %s up: %w", spec.name, err)
	}
	return l, nil
}

// syncPeers makes the vxlan device's routes, neighbours and FDB entries
// exactly those of peers: per peer, a route to its podCIDR via its vtep
// address (onlink), a permanent neighbour entry vtep address -> vtep MAC,
// and an FDB entry vtep MAC -> its node IP. Stale entries are removed.
func syncPeers(h *netlink.Handle, vx netlink.Link, peers []Peer) error {
	idx := vx.Attrs().Index
	wantRoute := map[string]bool{}
	wantNeigh := map[string]bool{}
	wantFDB := map[string]bool{}
	for _, p := range peers {
		mac := vtepMAC(p.PodCIDR)
		gw := vtepAddr(p.PodCIDR)
		wantRoute[p.PodCIDR.String()] = true
		wantNeigh[gw.String()] = true
		wantFDB[mac.String()+"/"+p.NodeIP.String()] = true
		if err := h.NeighSet(&netlink.Neigh{LinkIndex: idx, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT,
			Flags: netlink.NTF_SELF, IP: net.IP(p.NodeIP.AsSlice()), HardwareAddr: mac}); err != nil {
			return fmt.Errorf("fdb %s -> %s: %w", mac, p.NodeIP, err)
		}
		if err := h.NeighSet(&netlink.Neigh{LinkIndex: idx, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT,
			Type: unix.RTN_UNICAST, IP: net.IP(gw.AsSlice()), HardwareAddr: mac}); err != nil {
			return fmt.Errorf("neighbour %s -> %s: %w", gw, mac, err)
		}
		if err := h.RouteReplace(&netlink.Route{LinkIndex: idx, Dst: ipNet(p.PodCIDR), Gw: net.IP(gw.AsSlice()),
			Flags: int(netlink.FLAG_ONLINK)}); err != nil {
			return fmt.Errorf("route %s via %s: %w", p.PodCIDR, gw, err)
		}
	}
	routes, err := h.RouteList(vx, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("list vxlan routes: %w", err)
	}
	for _, r := range routes {
		if r.Dst == nil || r.Gw == nil || wantRoute[r.Dst.String()] {
			continue
		}
		if err := h.RouteDel(&r); err != nil {
			return fmt.Errorf("remove route %s: %w", r.Dst, err)
		}
	}
	neighs, err := h.NeighList(idx, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("list vxlan neighbours: %w", err)
	}
	for _, n := range neighs {
		if n.State&netlink.NUD_PERMANENT == 0 || wantNeigh[n.IP.String()] {
			continue
		}
		if err := h.NeighDel(&n); err != nil {
			return fmt.Errorf("remove neighbour %s: %w", n.IP, err)
		}
	}
	fdb, err := h.NeighList(idx, unix.AF_BRIDGE)
	if err != nil {
		return fmt.Errorf("list vxlan fdb: %w", err)
	}
	for _, n := range fdb {
		if n.State&netlink.NUD_PERMANENT == 0 || n.IP == nil || wantFDB[n.HardwareAddr.String()+"/"+n.IP.String()] {
			continue
		}
		n.Flags |= netlink.NTF_SELF
		if err := h.NeighDel(&n); err != nil {
			return fmt.Errorf("remove fdb %s: %w", n.HardwareAddr, err)
		}
	}
	return nil
}
