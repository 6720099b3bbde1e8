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
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	mdnetlink "github.com/mdlayher/netlink"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/agent/proxy"
)

// This file is the service proxy's data path: Services as nftables rules
// in the node's table, laid out after kube-proxy's nftables mode (verdict
// maps keyed by address, protocol and port; numgen to pick an endpoint).
// The chains the Manager owns jump into "services" (prerouting and
// output) first; the proxy owns everything below it:
//
//	services:  ip saddr != <cluster CIDR> ip daddr <service CIDR> jump svc-mark
//	           ip daddr . meta l4proto . th dport vmap @svc-ips
//	           fib daddr type local meta l4proto . th dport @svc-np-masq jump svc-mark
//	           fib daddr type local meta l4proto . th dport vmap @svc-nodeports
//	svc-<h>:   dnat to numgen random mod N map { i : <endpoint ip> . <port> }
//	ext-<h>:   the same over the local endpoints only (externalTrafficPolicy Local)
//	svc-mark:  mark set mark | 0x4000
//	svc-drop:  drop (a Service without endpoints)
//
// Node ports of Cluster policy go straight to svc-<h> and are marked for
// masquerade; Local ones go to ext-<h> and keep the client address. The
// Manager's postrouting masquerades what carries the mark, and a pod's
// own DNATed traffic sent back onto the bridge (hairpin). Each
// SyncServices is one nftables transaction that changes only the chains
// and map elements whose content changed. A Service costs one chain and
// one rule (plus its anonymous map), so a thousand Services are a batch
// of a few thousand netlink messages.

// Names of the proxy's fixed chains and maps.
const (
	chainServices = "services"
	chainMark     = "svc-mark"
	chainDrop     = "svc-drop"
	mapClusterIPs = "svc-ips"
	mapNodePorts  = "svc-nodeports"
	setNodeMasq   = "svc-np-masq"
	// MasqueradeMark is the packet mark bit the proxy sets on traffic
	// that must be masqueraded on its way out.
	MasqueradeMark = 0x4000
)

// proxyChainPrefixes are the prefixes of the per-Service chains.
var proxyChainPrefixes = []string{"svc-", "ext-"}

var (
	clusterIPKey = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)
	nodePortKey  = nftables.MustConcatSetType(nftables.TypeInetProto, nftables.TypeInetService)
)

// svcRule is one rule of a proxy chain, as data: it renders to nftables
// expressions and to a fingerprint that says whether it changed.
type svcRule struct {
	markIfSrcOutside netip.Prefix     // ip saddr != prefix jump svc-mark
	gotoChain        string           // goto chain
	spread           []netip.AddrPort // dnat to numgen random mod len map { i: spread[i] }
	drop             bool             // drop
}

// String is the rule as text, for fingerprints.
func (r svcRule) String() string {
	return fmt.Sprintf("%s|%s|%v|%t", r.markIfSrcOutside, r.gotoChain, r.spread, r.drop)
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
	nodeMasq   map[[8]byte]bool // node ports whose traffic is masqueraded
}

func newSvcPlan() *svcPlan {
	return &svcPlan{chains: map[string]svcChain{}, clusterIPs: map[[12]byte]string{}, nodePorts: map[[8]byte]string{}, nodeMasq: map[[8]byte]bool{}}
}

func hashName(prefix string, parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "|")))
	return prefix + hex.EncodeToString(h[:8])
}

// planServices renders st into chains and map elements. Without a
// service CIDR, each Service's chain marks traffic from outside the
// cluster itself.
func planServices(st *proxy.State, cluster, serviceCIDR netip.Prefix) *svcPlan {
	p := newSvcPlan()
	if st == nil {
		return p
	}
	for i := range st.Ports {
		sp := &st.Ports[i]
		key := sp.Key()
		spread := func(local bool) svcRule {
			var eps []netip.AddrPort
			for _, e := range sp.Endpoints {
				if !local || e.Local {
					eps = append(eps, netip.AddrPortFrom(e.IP, e.Port))
				}
			}
			if len(eps) == 0 {
				return svcRule{gotoChain: chainDrop}
			}
			return svcRule{spread: eps}
		}
		svc := hashName("svc-", key)
		var rules svcChain
		if !serviceCIDR.IsValid() && cluster.IsValid() {
			rules = append(rules, svcRule{markIfSrcOutside: cluster})
		}
		p.chains[svc] = append(rules, spread(sp.InternalLocal))
		p.clusterIPs[clusterIPElem(sp.ClusterIP, sp.Proto, sp.Port)] = svc
		if sp.NodePort == 0 {
			continue
		}
		k := nodePortElem(sp.Proto, sp.NodePort)
		if !sp.ExternalLocal {
			p.nodePorts[k] = svc
			p.nodeMasq[k] = true
			continue
		}
		ext := hashName("ext-", key)
		p.chains[ext] = svcChain{spread(true)}
		p.nodePorts[k] = ext
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
	setIDs  uint32       // last set ID of the transaction being built
}

// nextSetID returns a set ID unique within the transaction being built
// (callers hold mu).
func (p *serviceProxy) nextSetID() uint32 {
	p.setIDs++
	return p.setIDs
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
	var scidr netip.Prefix
	if m.cfg.ServiceCIDR != "" {
		scidr = netip.MustParsePrefix(m.cfg.ServiceCIDR).Masked()
	}
	want := planServices(st, m.cluster, scidr)
	if err := m.applyServices(want); err != nil {
		// The table may have been changed behind our back (a firewall
		// reload): the next sync rewrites every proxy chain.
		m.svc.applied = nil
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
	c, err := nftables.New(nftables.WithNetNSFd(int(m.hostNS)), nftables.WithSockOptions(bigBuffers))
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := &nftables.Table{Family: nftables.TableFamilyIPv4, Name: m.cfg.Table}
	c.AddTable(t)
	// Set IDs are ours, unique within the transaction: left zero,
	// google/nftables would take them from an unsynchronized global.
	m.svc.setIDs = 0
	ipMap := &nftables.Set{Table: t, ID: m.svc.nextSetID(), Name: mapClusterIPs, IsMap: true, Concatenation: true, KeyType: clusterIPKey, DataType: nftables.TypeVerdict}
	npMap := &nftables.Set{Table: t, ID: m.svc.nextSetID(), Name: mapNodePorts, IsMap: true, Concatenation: true, KeyType: nodePortKey, DataType: nftables.TypeVerdict}
	npMasq := &nftables.Set{Table: t, ID: m.svc.nextSetID(), Name: setNodeMasq, Concatenation: true, KeyType: nodePortKey}
	have := m.svc.applied
	first := have == nil
	if first {
		have = newSvcPlan()
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
		if err := c.AddSet(npMasq, nil); err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
		c.FlushSet(ipMap)
		c.FlushSet(npMap)
		c.FlushSet(npMasq)
		for _, n := range old {
			c.FlushChain(&nftables.Chain{Name: n, Table: t})
			have.chains[n] = svcChain{{drop: true}, {drop: true}} // never equal to a wanted chain
		}
		m.fixedServiceRules(c, t, want)
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
	var delMasq, addMasq []nftables.SetElement
	for k := range have.nodeMasq {
		if !want.nodeMasq[k] {
			delMasq = append(delMasq, nftables.SetElement{Key: k[:]})
		}
	}
	for k := range want.nodeMasq {
		if !have.nodeMasq[k] {
			addMasq = append(addMasq, nftables.SetElement{Key: k[:]})
		}
	}
	for _, op := range []struct {
		set *nftables.Set
		els []nftables.SetElement
		add bool
	}{{ipMap, delIP, false}, {npMap, delNP, false}, {npMasq, delMasq, false}, {ipMap, addIP, true}, {npMap, addNP, true}, {npMasq, addMasq, true}} {
		if len(op.els) == 0 {
			continue
		}
		// A netlink attribute holds at most 64 KiB: a thousand
		// elements go in several messages of one transaction.
		for lo := 0; lo < len(op.els); lo += elementsPerMessage {
			chunk := op.els[lo:min(lo+elementsPerMessage, len(op.els))]
			var err error
			if op.add {
				err = c.SetAddElements(op.set, chunk)
			} else {
				err = c.SetDeleteElements(op.set, chunk)
			}
			if err != nil {
				return fmt.Errorf("nftables: %w", err)
			}
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

// elementsPerMessage bounds the set elements of one netlink message.
const elementsPerMessage = 256

// batchBuffer is the socket buffer size for the proxy's transactions: a
// transaction is one netlink message batch, and a thousand Services make
// a batch of several megabytes (nft sizes its buffer the same way).
const batchBuffer = 64 << 20

// bigBuffers raises the netlink socket's send and receive buffers to
// batchBuffer, past the system's defaults (SO_*BUFFORCE, as root may).
func bigBuffers(c *mdnetlink.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		for _, o := range [][2]int{{unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}, {unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}} {
			if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o[0], batchBuffer); e != nil {
				if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o[1], batchBuffer); e != nil {
					serr = e
				}
			}
		}
	})
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("netlink socket buffers: %w", err)
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
func (m *Manager) fixedServiceRules(c *nftables.Conn, t *nftables.Table, want *svcPlan) {
	svc := &nftables.Chain{Name: chainServices, Table: t}
	jumpMark := &expr.Verdict{Kind: expr.VerdictJump, Chain: chainMark}
	if m.cfg.ServiceCIDR != "" {
		// Traffic to a cluster IP from outside the cluster network (the
		// node itself, a client of a node port) is masqueraded, so the
		// endpoint's answer comes back through this node.
		ex := prefixMatch(12, m.cluster, expr.CmpOpNeq)
		ex = append(ex, prefixMatch(16, netip.MustParsePrefix(m.cfg.ServiceCIDR).Masked(), expr.CmpOpEq)...)
		c.AddRule(&nftables.Rule{Table: t, Chain: svc, Exprs: append(ex, jumpMark)})
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: svc, Exprs: []expr.Any{
		ipField(16),
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 9},
		&expr.Payload{DestRegister: 10, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Lookup{SourceRegister: 1, SetName: mapClusterIPs, IsDestRegSet: true, DestRegister: 0},
	}})
	nodePort := func(tail ...expr.Any) []expr.Any {
		return append([]expr.Any{
			&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: nativeU32(unix.RTN_LOCAL)},
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Payload{DestRegister: 9, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		}, tail...)
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: svc, Exprs: nodePort(&expr.Lookup{SourceRegister: 1, SetName: setNodeMasq}, jumpMark)})
	c.AddRule(&nftables.Rule{Table: t, Chain: svc, Exprs: nodePort(&expr.Lookup{SourceRegister: 1, SetName: mapNodePorts, IsDestRegSet: true, DestRegister: 0})})
	c.AddRule(&nftables.Rule{Table: t, Chain: &nftables.Chain{Name: chainMark, Table: t}, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: nativeU32(^uint32(MasqueradeMark)), Xor: nativeU32(MasqueradeMark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1},
	}})
	c.AddRule(&nftables.Rule{Table: t, Chain: &nftables.Chain{Name: chainDrop, Table: t}, Exprs: []expr.Any{
		&expr.Verdict{Kind: expr.VerdictDrop},
	}})
}

// endpointData is the anonymous map's value type: address . port.
var endpointData = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)

// addServiceRule renders r into ch.
func (m *Manager) addServiceRule(c *nftables.Conn, t *nftables.Table, ch *nftables.Chain, r svcRule) error {
	var ex []expr.Any
	switch {
	case r.markIfSrcOutside.IsValid():
		ex = append(prefixMatch(12, r.markIfSrcOutside, expr.CmpOpNeq), &expr.Verdict{Kind: expr.VerdictJump, Chain: chainMark})
	case r.gotoChain != "":
		ex = []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: r.gotoChain}}
	case r.drop:
		ex = []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}
	case len(r.spread) > 0:
		set := &nftables.Set{Table: t, ID: m.svc.nextSetID(), Name: "__map%d", Anonymous: true, Constant: true, IsMap: true,
			KeyType: nftables.TypeInteger, DataType: endpointData, KeyByteOrder: binaryutil.NativeEndian}
		els := make([]nftables.SetElement, len(r.spread))
		for i, ap := range r.spread {
			a := ap.Addr().As4()
			v := []byte{a[0], a[1], a[2], a[3], byte(ap.Port() >> 8), byte(ap.Port()), 0, 0}
			els[i] = nftables.SetElement{Key: nativeU32(uint32(i)), Val: v}
		}
		if err := c.AddSet(set, els); err != nil {
			return fmt.Errorf("nftables: %w", err)
		}
		ex = []expr.Any{
			&expr.Numgen{Register: 1, Modulus: uint32(len(r.spread)), Type: unix.NFT_NG_RANDOM},
			&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID, IsDestRegSet: true, DestRegister: 1},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 9, Specified: true},
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
	h, err := netlink.NewHandleAt(m.hostNS, unix.NETLINK_NETFILTER) // conntrack only: asking for every family fails on kernels without xfrm_user
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

// Gateway is the node's address on the bridge (the first of its
// podCIDR); invalid until the podCIDR is known. The agent's DNS server
// listens there.
func (m *Manager) Gateway() netip.Addr {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sn == nil {
		return netip.Addr{}
	}
	return m.sn.gateway
}

// ListenDNS opens a UDP and a TCP socket on addr in the node's network
// namespace (the sockets stay there whichever goroutine serves them).
func (m *Manager) ListenDNS(addr netip.AddrPort) (net.PacketConn, net.Listener, error) {
	var pc net.PacketConn
	var ln net.Listener
	err := inNS(m.hostNS, func() error {
		var err error
		if pc, err = net.ListenPacket("udp4", addr.String()); err != nil {
			return err
		}
		if ln, err = net.Listen("tcp4", addr.String()); err != nil {
			pc.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("listen for DNS on %s: %w", addr, err)
	}
	return pc, ln, nil
}
