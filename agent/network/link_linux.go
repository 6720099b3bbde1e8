package network

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// vethPrefix starts the host-side name of every pod veth skiff makes.
const vethPrefix = "skv"

// podIfName is the pod end of its veth pair.
const podIfName = "eth0"

// vethName is the host-side veth name of pod uid: "skv" and 11 hex digits
// of a hash of the uid (interface names have at most 15 bytes).
func vethName(uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return vethPrefix + hex.EncodeToString(sum[:])[:11]
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf)
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func hostNet(a netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(bits, a.BitLen())}
}

// ensureBridge makes the bridge (if missing), gives it exactly the
// gateway address of sn, brings it up, and sets ip_forward and the
// bridge's route_localnet (hostPort DNAT of 127.0.0.1).
func ensureBridge(h *netlink.Handle, ns netns.NsHandle, name string, sn subnet) error {
	l, err := h.LinkByName(name)
	if isNotFound(err) {
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
		if err := h.LinkAdd(br); err != nil {
			return fmt.Errorf("create bridge %s: %w", name, err)
		}
		l, err = h.LinkByName(name)
	}
	if err != nil {
		return fmt.Errorf("find bridge %s: %w", name, err)
	}
	if l.Type() != "bridge" {
		return fmt.Errorf("link %s exists and is a %s, not a bridge: %w", name, l.Type(), ErrInvalid)
	}
	if err := setOnlyAddr(h, l, hostNet(sn.gateway, sn.prefix.Bits())); err != nil {
		return fmt.Errorf("bridge %s: %w", name, err)
	}
	if err := h.LinkSetUp(l); err != nil {
		return fmt.Errorf("bring bridge %s up: %w", name, err)
	}
	if err := writeSysctl(ns, "net/ipv4/ip_forward", "1"); err != nil {
		return err
	}
	return writeSysctl(ns, "net/ipv4/conf/"+name+"/route_localnet", "1")
}

// setOnlyAddr gives l the IPv4 address want and removes its other IPv4
// addresses.
func setOnlyAddr(h *netlink.Handle, l netlink.Link, want *net.IPNet) error {
	addrs, err := h.AddrList(l, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	have := false
	for _, a := range addrs {
		if a.IPNet.String() == want.String() {
			have = true
			continue
		}
		if err := h.AddrDel(l, &a); err != nil {
			return fmt.Errorf("remove address %s: %w", a.IPNet, err)
		}
	}
	if !have {
		if err := h.AddrAdd(l, &netlink.Addr{IPNet: want}); err != nil {
			return fmt.Errorf("add address %s: %w", want, err)
		}
	}
	return nil
}

// deleteLink removes the link name; a missing link is fine.
func deleteLink(h *netlink.Handle, name string) error {
	l, err := h.LinkByName(name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find link %s: %w", name, err)
	}
	if err := h.LinkDel(l); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	return nil
}

// setUpVeth wires pod namespace podNS to the bridge: a veth pair whose
// pod end is created inside podNS as eth0 with addr, up, with a default
// route via the gateway; the host end is brought up last. Leftovers of
// an earlier attempt are replaced.
func setUpVeth(h *netlink.Handle, bridge string, mtu int, uid string, podNS netns.NsHandle, addr netip.Addr, sn subnet) error {
	br, err := h.LinkByName(bridge)
	if err != nil {
		return fmt.Errorf("find bridge %s: %w", bridge, err)
	}
	name := vethName(uid)
	if err := deleteLink(h, name); err != nil {
		return err
	}
	ph, err := netlink.NewHandleAt(podNS, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink in pod netns: %w", err)
	}
	defer ph.Close()
	if err := deleteLink(ph, podIfName); err != nil {
		return fmt.Errorf("pod netns: %w", err)
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: name, MTU: mtu, MasterIndex: br.Attrs().Index},
		PeerName:      podIfName,
		PeerNamespace: netlink.NsFd(int(podNS)),
		PeerMTU:       uint32(mtu),
	}
	if err := h.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth %s: %w", name, err)
	}
	host, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find veth %s: %w", name, err)
	}
	// Hairpin: with br_netfilter loaded, a pod's packet DNATed back to
	// the pod itself (its own Service) is bridged out of the port it came
	// in on, which a bridge port allows only in hairpin mode.
	if err := h.LinkSetHairpin(host, true); err != nil {
		return fmt.Errorf("veth %s hairpin mode: %w", name, err)
	}
	eth, err := ph.LinkByName(podIfName)
	if err != nil {
		return fmt.Errorf("pod netns: find %s: %w", podIfName, err)
	}
	if err := ph.AddrAdd(eth, &netlink.Addr{IPNet: hostNet(addr, sn.prefix.Bits())}); err != nil {
		return fmt.Errorf("pod netns: address %s: %w", addr, err)
	}
	if err := ph.LinkSetUp(eth); err != nil {
		return fmt.Errorf("pod netns: bring %s up: %w", podIfName, err)
	}
	def := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.IP(sn.gateway.AsSlice()), Dst: nil}
	if err := ph.RouteReplace(def); err != nil {
		return fmt.Errorf("pod netns: default route via %s: %w", sn.gateway, err)
	}
	// The host end comes up last: an up host veth means the whole set-up
	// was done (vethUp), which is how a restarted agent tells a pod it
	// set up from one whose set-up it died in the middle of.
	if err := h.LinkSetUp(host); err != nil {
		return fmt.Errorf("bring veth %s up: %w", name, err)
	}
	return nil
}

// vethUp reports whether pod uid's host veth exists and is up, that is,
// whether setUpVeth finished for it. An error other than "no such link"
// counts as up: the pod is not set up again on a doubt.
func vethUp(h *netlink.Handle, uid string) bool {
	l, err := h.LinkByName(vethName(uid))
	if err != nil {
		return !isNotFound(err)
	}
	return l.Attrs().Flags&net.FlagUp != 0
}

// strayVeths lists the host links skiff named for pods, attached to
// bridge, that are not in keep (host-side veth names). Only bridge's own
// veths count: other agents on the same host (tests, a second cluster's
// agent) have their own bridges, and their pods' veths are theirs.
func strayVeths(h *netlink.Handle, bridge string, keep map[string]bool) ([]string, error) {
	br, err := h.LinkByName(bridge)
	if isNotFound(err) {
		return nil, nil // no bridge, no veths of ours on it
	}
	if err != nil {
		return nil, fmt.Errorf("find bridge %s: %w", bridge, err)
	}
	links, err := h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var out []string
	for _, l := range links {
		n := l.Attrs().Name
		if l.Type() == "veth" && strings.HasPrefix(n, vethPrefix) && len(n) == len(vethPrefix)+11 &&
			l.Attrs().MasterIndex == br.Attrs().Index && !keep[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// routeServices routes the service CIDR onto the bridge from the gateway
// address (see Config.ServiceCIDR).
func routeServices(h *netlink.Handle, bridge string, cidr netip.Prefix, gateway netip.Addr) error {
	l, err := h.LinkByName(bridge)
	if err != nil {
		return fmt.Errorf("find bridge %s: %w", bridge, err)
	}
	r := &netlink.Route{LinkIndex: l.Attrs().Index, Dst: ipNet(cidr), Src: net.IP(gateway.AsSlice()), Scope: netlink.SCOPE_LINK}
	if err := h.RouteReplace(r); err != nil {
		return fmt.Errorf("route service CIDR %s to %s: %w", cidr, bridge, err)
	}
	return nil
}
