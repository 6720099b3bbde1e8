package network

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sort"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// natRule is one hostPort DNAT: traffic to a local address (HostIP when
// set) on HostPort goes to PodIP:ContainerPort.
type natRule struct {
	Proto    byte // unix.IPPROTO_TCP or IPPROTO_UDP
	HostIP   netip.Addr
	HostPort uint16
	PodIP    netip.Addr
	PodPort  uint16
	Pod      string // uid, for ordering
}

// natRules flattens the pods' host ports into DNAT rules, sorted, leaving
// out malformed entries. Two pods claiming one port: the first by uid
// wins (the scheduler keeps that from happening on purpose).
func natRules(pods map[string]podRecord) []natRule {
	var out []natRule
	taken := map[string]bool{}
	uids := make([]string, 0, len(pods))
	for u := range pods {
		uids = append(uids, u)
	}
	sort.Strings(uids)
	for _, u := range uids {
		rec := pods[u]
		ip, err := netip.ParseAddr(rec.IP)
		if err != nil || !ip.Is4() {
			continue
		}
		for _, hp := range rec.HostPorts {
			r := natRule{Pod: u, PodIP: ip, HostPort: uint16(hp.HostPort), PodPort: uint16(hp.ContainerPort)}
			switch hp.Protocol {
			case "", "TCP":
				r.Proto = unix.IPPROTO_TCP
			case "UDP":
				r.Proto = unix.IPPROTO_UDP
			default:
				continue
			}
			if hp.HostPort <= 0 || hp.HostPort > 65535 || hp.ContainerPort <= 0 || hp.ContainerPort > 65535 {
				continue
			}
			if hp.HostIP != "" && hp.HostIP != "0.0.0.0" {
				a, err := netip.ParseAddr(hp.HostIP)
				if err != nil || !a.Is4() {
					continue
				}
				r.HostIP = a
			}
			key := fmt.Sprintf("%d/%d", r.Proto, r.HostPort)
			if taken[key] {
				continue
			}
			taken[key] = true
			out = append(out, r)
		}
	}
	return out
}

// ruleInput is everything the table is built from.
type ruleInput struct {
	table   string
	bridge  string
	podCIDR netip.Prefix // invalid: no masquerade yet
	cluster netip.Prefix
	nat     []natRule
}

// syncTable rewrites the chains of skiff's nftables table in ns that the
// Manager owns (prerouting, output, postrouting, hostports) from in, in a
// single atomic batch. The table and the service proxy's chains
// (services_linux.go) stay: the Manager only jumps into "services".
func syncTable(ns netns.NsHandle, in ruleInput) error {
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: in.table}
	c.AddTable(t)
	policy := nftables.ChainPolicyAccept
	pre := c.AddChain(&nftables.Chain{Name: "prerouting", Table: t, Type: nftables.ChainTypeNAT, Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest, Policy: &policy})
	out := c.AddChain(&nftables.Chain{Name: "output", Table: t, Type: nftables.ChainTypeNAT, Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest, Policy: &policy})
	post := c.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT, Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource, Policy: &policy})
	hp := c.AddChain(&nftables.Chain{Name: "hostports", Table: t})
	svc := c.AddChain(&nftables.Chain{Name: chainServices, Table: t}) // the proxy's; created empty if missing
	for _, ch := range []*nftables.Chain{pre, out, post, hp} {
		c.FlushChain(ch)
	}

	// Service traffic first (cluster IPs, node ports), then hostPorts:
	// traffic to one of the node's own addresses goes through hostports.
	for _, ch := range []*nftables.Chain{pre, out} {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: svc.Name}}})
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
			&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: nativeU32(unix.RTN_LOCAL)},
			&expr.Verdict{Kind: expr.VerdictJump, Chain: hp.Name},
		}})
	}
	for _, r := range in.nat {
		var ex []expr.Any
		if r.HostIP.IsValid() {
			ex = append(ex, ipField(16), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: r.HostIP.AsSlice()})
		}
		ex = append(ex,
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{r.Proto}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be16(r.HostPort)},
			&expr.Immediate{Register: 1, Data: r.PodIP.AsSlice()},
			&expr.Immediate{Register: 2, Data: be16(r.PodPort)},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
		)
		c.AddRule(&nftables.Rule{Table: t, Chain: hp, Exprs: ex})
	}

	// What the service proxy marked is masqueraded (the mark cleared, so
	// an encapsulated copy is not masqueraded again).
	c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: nativeU32(MasqueradeMark), Xor: nativeU32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: nativeU32(0)},
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: nativeU32(^uint32(MasqueradeMark)), Xor: nativeU32(0)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
		&expr.Masq{},
	}})
	if in.podCIDR.IsValid() {
		// A local pod's DNATed traffic (a Service or hostPort) sent back
		// onto the bridge: the backend would answer the pod directly
		// over the bridge, past the reverse NAT, so masquerade it to the
		// gateway. This covers a pod reaching its own Service (hairpin).
		ex := []expr.Any{
			&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: nativeU32(ctStatusDstNAT), Xor: nativeU32(0)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: nativeU32(0)},
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(in.bridge)},
		}
		ex = append(ex, prefixMatch(12, in.podCIDR, expr.CmpOpEq)...)
		c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: append(ex, &expr.Masq{})})
	}
	// 127.0.0.1:hostPort DNATed to a pod: the pod cannot answer a
	// loopback source, so masquerade it to the gateway.
	c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: append(
		prefixMatch(12, netip.MustParsePrefix("127.0.0.0/8"), expr.CmpOpEq),
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(in.bridge)},
		&expr.Masq{},
	)})
	if in.podCIDR.IsValid() {
		// pod traffic leaving the cluster network
		ex := prefixMatch(12, in.podCIDR, expr.CmpOpEq)
		ex = append(ex, prefixMatch(16, in.cluster, expr.CmpOpNeq)...)
		ex = append(ex, &expr.Masq{})
		c.AddRule(&nftables.Rule{Table: t, Chain: post, Exprs: ex})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: write table %s: %w", in.table, err)
	}
	return nil
}

// deleteTable removes skiff's table from ns; a missing table is fine.
func deleteTable(ns netns.NsHandle, name string) error {
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: name}
	c.AddTable(t)
	c.DelTable(t)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: delete table %s: %w", name, err)
	}
	return nil
}

// ctStatusDstNAT is conntrack's IPS_DST_NAT status bit.
const ctStatusDstNAT = 0x20

// ipField loads 4 bytes of the IPv4 header at offset (12 saddr, 16
// daddr) into register 1.
func ipField(offset uint32) *expr.Payload {
	return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4}
}

// prefixMatch compares the address at offset, masked to p's length,
// with p's network address.
func prefixMatch(offset uint32, p netip.Prefix, op expr.CmpOp) []expr.Any {
	mask := make([]byte, 4)
	binary.BigEndian.PutUint32(mask, ^uint32(0)<<(32-p.Bits()))
	if p.Bits() == 0 {
		mask = []byte{0, 0, 0, 0}
	}
	return []expr.Any{
		ipField(offset),
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: op, Register: 1, Data: p.Masked().Addr().AsSlice()},
	}
}

func be16(v uint16) []byte {
	b := make([]byte, 2)
	binary.BigEndian.PutUint16(b, v)
	return b
}

func nativeU32(v uint32) []byte {
	b := make([]byte, 4)
	binary.NativeEndian.PutUint32(b, v)
	return b
}

// ifname is an interface name as nftables compares it: 16 bytes, NUL
// padded.
func ifname(n string) []byte {
	b := make([]byte, 16)
	copy(b, n)
	return b
}
