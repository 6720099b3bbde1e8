package network

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/agent/proxy"
)

// This file is the service proxy's data path: Services as nftables rules
// in the node's table, laid out as kube-proxy's nftables mode lays them
// out. The chains the Manager owns jump into "services" (prerouting and
// output) first; the proxy owns everything below it:
//
//	services:   ip daddr . meta l4proto . th dport vmap @svc-ips
//	            fib daddr type local  meta l4proto . th dport vmap @svc-nodeports
//	svc-<h>:    [ip saddr != <cluster CIDR> jump svc-mark]  numgen random mod N vmap { i: goto ep-<h> }
//	ext-<h>:    node port: jump svc-mark; goto svc-<h>   (externalTrafficPolicy Local: local endpoints, no mark)
//	ep-<h>:     ip saddr <ep> jump svc-mark;  dnat to <ep>:<port>
//	svc-mark:   mark set mark | 0x4000
//	svc-drop:   drop (a Service without endpoints)
//
// The Manager's postrouting masquerades what carries the mark. Each
// SyncServices is one nftables transaction that changes only the chains
// and map elements whose content changed, so a sync of one Service in a
// thousand costs one Service's rules.

// Names of the proxy's fixed chains and maps.
const (
	chainServices = "services"
	chainMark     = "svc-mark"
	chainDrop     = "svc-drop"
	mapClusterIPs = "svc-ips"
	mapNodePorts  = "svc-nodeports"
	// MasqueradeMark is the packet mark bit the proxy sets on traffic
	// that must be masqueraded on its way out.
	MasqueradeMark = 0x4000
)

// proxyChainPrefixes are the prefixes of the per-Service chains.
var proxyChainPrefixes = []string{"svc-", "ext-", "ep-"}

var (
	clusterIPKey = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
	nodePortKey  = nftables.MustConcatSetType(nftables.TypeInetProto, nftables.TypeInetService)
)

// svcRule is one rule of a proxy chain, as data: it renders to nftables
// expressions and to a fingerprint that says whether it changed.
type svcRule struct {
	markIfSrcOutside netip.Prefix   // ip saddr != prefix jump svc-mark
	markIfSrc        netip.Addr     // ip saddr == addr jump svc-mark
	markAlways       bool           // jump svc-mark
	gotoChain        string         // goto chain
	spread           []string       // numgen random mod len vmap { i: goto spread[i] }
	dnat             netip.AddrPort // dnat to
	drop             bool           // drop
}

func (r svcRule) String() string {
	return fmt.Sprintf("%s|%s|%t|%s|%v|%s|%t", r.markIfSrcOutside, r.markIfSrc, r.markAlways, r.gotoChain, r.spread, r.dnat, r.drop)
}

// svcChain is a proxy chain's rules.
type svcChain []svcRule

func (c svcChain) fingerprint() string {
	var b strings.Builder
	for _, r := range c {
		b.WriteString(r.String())
		b.WriteByte(';')
	}
	return b.String()
}

// svcPlan is the proxy's whole desired state in nftables terms.
type svcPlan struct {
	chains     map[string]svcChain
	clusterIPs map[[12]byte]string // key → chain
	nodePorts  map[[8]byte]string
}

func hashName(prefix string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "|")))
	return prefix + hex.EncodeToString(h[:8])
}

// planServices renders st into chains and map elements.
func planServices(st *proxy.State, cluster netip.Prefix) *svcPlan {
	p := &svcPlan{chains: map[string]svcChain{}, clusterIPs: map[[12]byte]string{}, nodePorts: map[[8]byte]string{}}
	if st == nil {
		return p
	}
	for i := range st.Ports {
		sp := &st.Ports[i]
		key := sp.Key()
		epChains := func(local bool) []string {
			var out []string
			for _, e := range sp.Endpoints {
				if local && !e.Local {
					continue
				}
				name := hashName("ep-", key, e.String())
				p.chains[name] = svcChain{
					{markIfSrc: e.IP},
					{dnat: netip.AddrPortFrom(e.IP, e.Port)},
				}
				out = append(out, name)
			}
			return out
		}
		svc := hashName("svc-", key)
		var rules svcChain
		if cluster.IsValid() {
			rules = append(rules, svcRule{markIfSrcOutside: cluster})
		}
		if eps := epChains(sp.InternalLocal); len(eps) > 0 {
			rules = append(rules, svcRule{spread: eps})
		} else {
			rules = append(rules, svcRule{gotoChain: chainDrop})
		}
		p.chains[svc] = rules
		p.clusterIPs[clusterIPElem(sp.ClusterIP, sp.Proto, sp.Port)] = svc
		if sp.NodePort == 0 {
			continue
		}
		ext := hashName("ext-", key)
		switch {
		case !sp.ExternalLocal:
			p.chains[ext] = svcChain{{markAlways: true}, {gotoChain: svc}}
		default:
			if eps := epChains(true); len(eps) > 0 {
				p.chains[ext] = svcChain{{spread: eps}}
			} else {
				p.chains[ext] = svcChain{{gotoChain: chainDrop}}
			}
		}
		p.nodePorts[nodePortElem(sp.Proto, sp.NodePort)] = ext
	}
	return p
}

func clusterIPElem(ip netip.Addr, proto uint8, port uint16) [12]byte {
	var k [12]byte
	a := ip.As4()
	copy(k[0:4], a[:])
	k[4] = proto
	k[8], k[9] = byte(port>>8), byte(port)
	return k
}

func nodePortElem(proto uint8, port uint16) [8]byte {
	var k [8]byte
	k[0] = proto
	k[4], k[5] = byte(port>>8), byte(port)
	return k
}

// serviceProxy is the programmed state of the proxy's chains, for the
// next sync to diff against.
type serviceProxy struct {
	mu      sync.Mutex
	applied *svcPlan     // nil before the first sync of this process
	state   *proxy.State // what applied was built from
	flushed func(error)  // test hook: called after each conntrack flush
}

// SyncServices programs st as the node's service rules in one nftables
// transaction, changing only what differs from the last sync (the first
// sync of a process rewrites every proxy chain, removing what an earlier
// run left). Then it deletes the UDP conntrack entries of endpoints that
// left, so their clients move on. Safe for concurrent use; calls are
// serialized.
func (m *Manager) SyncServices(st *proxy.State) error {
	m.svc.mu.Lock()
	defer m.svc.mu.Unlock()
	want := planServices(st, m.cluster)
	if err := m.applyServices(want); err != nil {
		return fmt.Errorf("service proxy: %w", err)
	}
	old := m.svc.state
	m.svc.applied, m.svc.state = want, st
	eps, emptied := proxy.RemovedUDP(old, st)
	if len(eps) == 0 && len(emptied) == 0 {
		return nil
	}
	err := m.flushUDPConntrack(eps, emptied)
	if m.svc.flushed != nil {
		m.svc.flushed(err)
	}
	if err != nil {
		return fmt.Errorf("service proxy: %w", err)
	}
	return nil
}

// applyServices writes the difference between the applied plan and want
// as one transaction.
func (m *Manager) applyServices(want *svcPlan) error {
	c, err := nftables.New(nftables.WithNetNSFd(int(m.hostNS)))
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: m.cfg.Table}
	c.AddTable(t)
	ipMap := &nftables.Set{Table: t, Name: mapClusterIPs, IsMap: true, Concatenation: true, KeyType: clusterIPKey, DataType: nftables.TypeVerdict}
	npMap := &nftables.Set{Table: t, Name: mapNodePorts, IsMap: true, Concatenation: true, KeyType: nodePortKey, DataType: nftables.TypeVerdict}
	have := m.svc.applied
	first := have == nil
	if first {
		have = &svcPlan{chains: map[string]svcChain{}, clusterIPs: map[[12]byte]string{}, nodePorts: map[[8]byte]string{}}
		// A fresh process: rebuild the fixed chains and maps, and
		// empty every proxy chain an earlier run left (they are deleted
		// below unless wanted, then refilled).
		old, err := m.proxyChains(c, t)
		if err != nil {
			return err
		}
		for _, n := range []string{chainServices, chainMark, chainDrop} {
			c.AddChain(&nftables.Chain{Name: n, Table: t})
			c.FlushChain(&nftables.Chain{Name: n, Table: t})
		}
		if err := c.AddSet(ipMap, nil); err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
		if err := c.AddSet(npMap, nil); err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
		c.FlushSet(ipMap)
		c.FlushSet(npMap)
		for _, n := range old {
			c.FlushChain(&nftables.Chain{Name: n, Table: t})
			have.chains[n] = svcChain{{drop: true}, {drop: true}} // never equal to a wanted chain
		}
		m.fixedServiceRules(c, t)
	}
	// New chains first, so map elements and jumps can name them.
	for name := range want.chains {
		if _, ok := have.chains[name]; !ok {
			c.AddChain(&nftables.Chain{Name: name, Table: t})
		}
	}
	for name, rules := range want.chains {
		old, ok := have.chains[name]
		if ok && old.fingerprint() == rules.fingerprint() {
			continue
		}
		ch := &nftables.Chain{Name: name, Table: t}
		if ok {
			c.FlushChain(ch)
		}
		for _, r := range rules {
			if err := m.addServiceRule(c, t, ch, r); err != nil {
				return err
			}
		}
	}
	var delIP, addIP []nftables.SetElement
	for k, ch := range have.clusterIPs {
		if w, ok := want.clusterIPs[k]; !ok || w != ch {
			delIP = append(delIP, nftables.SetElement{Key: k[:]})
		}
	}
	for k, ch := range want.clusterIPs {
		if h, ok := have.clusterIPs[k]; !ok || h != ch {
			addIP = append(addIP, nftables.SetElement{Key: k[:], VerdictData: &expr.Verdict{Kind: expr.VerdictGoto, Chain: ch}})
		}
	}
	var delNP, addNP []nftables.SetElement
	for k, ch := range have.nodePorts {
		if w, ok := want.nodePorts[k]; !ok || w != ch {
			delNP = append(delNP, nftables.SetElement{Key: k[:]})
		}
	}
	for k, ch := range want.nodePorts {
		if h, ok := have.nodePorts[k]; !ok || h != ch {
			addNP = append(addNP, nftables.SetElement{Key: k[:], VerdictData: &expr.Verdict{Kind: expr.VerdictGoto, Chain: ch}})
		}
	}
	for _, op := range []struct {
		set *nftables.Set
		els []nftables.SetElement
		add bool
	}{{ipMap, delIP, false}, {npMap, delNP, false}, {ipMap, addIP, true}, {npMap, addNP, true}} {
		if len(op.els) == 0 {
			continue
		}
		var err error
		if op.add {
			err = c.SetAddElements(op.set, op.els)
		} else {
			err = c.SetDeleteElements(op.set, op.els)
		}
		if err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
	}
	// Chains no longer wanted go last, once nothing refers to them: all
	// are emptied before any is deleted, as they may refer to each other
	// (ext- to svc-, svc- to ep-).
	var gone []*nftables.Chain
	for name := range have.chains {
		if _, ok := want.chains[name]; !ok {
			ch := &nftables.Chain{Name: name, Table: t}
			c.FlushChain(ch)
			gone = append(gone, ch)
		}
	}
	for _, ch := range gone {
		c.DelChain(ch)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: write services to table %s: %w", m.cfg.Table, err)
	}
	return nil
}

// proxyChains lists the per-Service chains in the table (none when the
// table does not exist yet).
func (m *Manager) proxyChains(c *nftables.Conn, t *nftables.Table) ([]string, error) {
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return nil, fmt.Errorf("nftables: list chains: %w", err)
	}
	var out []string
	for _, ch := range chains {
		if ch.Table == nil || ch.Table.Name != t.Name {
			continue
		}
		for _, p := range proxyChainPrefixes {
			if strings.HasPrefix(ch.Name, p) && ch.Name != chainMark && ch.Name != chainDrop {
				out = append(out, ch.Name)
				break
			}
		}
	}
	return out, nil
}

// fixedServiceRules fills services, svc-mark and svc-drop.
func (m *Manager) fixedServiceRules(c *nftables.Conn, t *nftables.Table) {
	svc := &nftables.Chain{Name: chainServices, Table: t}
	c.AddRule(&nftables.Rule{Table: t, Chain: svc, Exprs: []expr.Any{
		ipField(16),
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 9},
		&expr.Payload{DestRegister: 10, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: 1, SetName: mapClusterIPs, IsDestRegSet: true, DestRegister: 0},
	}})
	c.AddRule(&nftables.Rule{Table: t, Chain: svc, Exprs: []expr.Any{
		&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: nativeU32(unix.RTN_LOCAL)},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Payload{DestRegister: 9, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: 1, SetName: mapNodePorts, IsDestRegSet: true, DestRegister: 0},
	}})
	c.AddRule(&nftables.Rule{Table: t, Chain: &nftables.Chain{Name: chainMark, Table: t}, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: nativeU32(^uint32(MasqueradeMark)), Xor: nativeU32(MasqueradeMark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
	}})
	c.AddRule(&nftables.Rule{Table: t, Chain: &nftables.Chain{Name: chainDrop, Table: t}, Exprs: []expr.Any{
		&expr.Verdict{Kind: expr.VerdictDrop},
	}})
}

// addServiceRule renders r into ch.
func (m *Manager) addServiceRule(c *nftables.Conn, t *nftables.Table, ch *nftables.Chain, r svcRule) error {
	var ex []expr.Any
	jumpMark := &expr.Verdict{Kind: expr.VerdictJump, Chain: chainMark}
	switch {
	case r.markIfSrcOutside.IsValid():
		ex = append(prefixMatch(12, r.markIfSrcOutside, expr.CmpOpNeq), jumpMark)
	case r.markIfSrc.IsValid():
		ex = []expr.Any{ipField(12), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: r.markIfSrc.AsSlice()}, jumpMark}
	case r.markAlways:
		ex = []expr.Any{jumpMark}
	case r.gotoChain != "":
		ex = []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: r.gotoChain}}
	case r.drop:
		ex = []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}
	case r.dnat.IsValid():
		ex = []expr.Any{
			&expr.Immediate{Register: 1, Data: r.dnat.Addr().AsSlice()},
			&expr.Immediate{Register: 2, Data: be16(r.dnat.Port())},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
		}
	case len(r.spread) > 0:
		set := &nftables.Set{Table: t, Anonymous: true, Constant: true, IsMap: true, KeyType: nftables.TypeInteger, DataType: nftables.TypeVerdict}
		els := make([]nftables.SetElement, len(r.spread))
		for i, name := range r.spread {
			els[i] = nftables.SetElement{Key: nativeU32(uint32(i)), VerdictData: &expr.Verdict{Kind: expr.VerdictGoto, Chain: name}}
		}
		if err := c.AddSet(set, els); err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
		ex = []expr.Any{
			&expr.Numgen{Register: 1, Modulus: uint32(len(r.spread)), Type: unix.NFT_NG_RANDOM},
			&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID, IsDestRegSet: true, DestRegister: 0},
		}
	default:
		return errors.New("empty service rule")
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: ex})
	return nil
}

// flushUDPConntrack deletes the UDP conntrack entries whose reply comes
// from a removed endpoint's address (any port: conntrack filters have no
// reply port), or that go to a cluster IP left without
// endpoints.
func (m *Manager) flushUDPConntrack(eps []proxy.Endpoint, emptied []netip.Addr) error {
	h, err := netlink.NewHandleAt(m.hostNS)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	var filters []netlink.CustomConntrackFilter
	for _, e := range eps {
		f := &netlink.ConntrackFilter{}
		if err := errors.Join(f.AddProtocol(unix.IPPROTO_UDP), f.AddIP(netlink.ConntrackReplySrcIP, net.IP(e.IP.AsSlice()))); err != nil {
			return fmt.Errorf("conntrack filter: %w", err)
		}
		filters = append(filters, f)
	}
	for _, ip := range emptied {
		f := &netlink.ConntrackFilter{}
		if err := errors.Join(f.AddProtocol(unix.IPPROTO_UDP), f.AddIP(netlink.ConntrackOrigDstIP, net.IP(ip.AsSlice()))); err != nil {
			return fmt.Errorf("conntrack filter: %w", err)
		}
		filters = append(filters, f)
	}
	if _, err := h.ConntrackDeleteFilters(netlink.ConntrackTable, unix.AF_INET, filters...); err != nil {
		return fmt.Errorf("delete conntrack entries: %w", err)
	}
	return nil
}
