package ipam

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
)

// SubnetBits is the size of each node's pod network: a /24.
const SubnetBits = 24

// Errors of the allocator (wrapped; test with errors.Is).
var (
	// ErrFull: every /24 of the cluster CIDR is taken.
	ErrFull = errors.New("ipam: cluster CIDR exhausted")
	// ErrConflict: the /24 belongs to another node, or lies outside the
	// cluster CIDR, or is not a /24.
	ErrConflict = errors.New("ipam: pod CIDR conflict")
)

// Allocator hands out /24s of a cluster CIDR to nodes. It is a plain data
// structure: not safe for concurrent use (the Controller's loop owns it).
type Allocator struct {
	cluster netip.Prefix
	byCIDR  map[netip.Prefix]string // subnet -> node
	byNode  map[string]netip.Prefix
	// low is the index of the lowest subnet that may be free: every one
	// below it is taken. Allocate scans from it, so a fleet's joins do
	// not walk every taken subnet each (10 000 joins over a /8 did 50
	// million map lookups).
	low uint32
}

// NewAllocator returns an empty allocator over cluster, an IPv4 prefix of
// /24 or larger ("10.42.0.0/16").
func NewAllocator(cluster string) (*Allocator, error) {
	p, err := netip.ParsePrefix(cluster)
	if err != nil {
		return nil, fmt.Errorf("cluster CIDR %q: %w", cluster, err)
	}
	if !p.Addr().Is4() || p.Bits() > SubnetBits {
		return nil, fmt.Errorf("cluster CIDR %s: want an IPv4 prefix of /%d or larger", cluster, SubnetBits)
	}
	return &Allocator{cluster: p.Masked(), byCIDR: map[netip.Prefix]string{}, byNode: map[string]netip.Prefix{}}, nil
}

// Cluster is the cluster CIDR.
func (a *Allocator) Cluster() netip.Prefix { return a.cluster }

// size is the number of subnets of the cluster CIDR.
func (a *Allocator) size() uint32 { return 1 << (SubnetBits - a.cluster.Bits()) }

// Free is the number of subnets nobody holds.
func (a *Allocator) Free() int { return int(a.size()) - len(a.byCIDR) }

// subnet is the i-th subnet of the cluster CIDR.
func (a *Allocator) subnet(i uint32) netip.Prefix {
	base := a.cluster.Addr().As4()
	v := (uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8) + i<<8
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), 0}), SubnetBits)
}

// index is the position of subnet p (a /24 inside the cluster CIDR).
func (a *Allocator) index(p netip.Prefix) uint32 {
	b, base := p.Addr().As4(), a.cluster.Addr().As4()
	return (uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2])) - (uint32(base[0])<<16 | uint32(base[1])<<8 | uint32(base[2]))
}

// Get returns node's subnet, if it has one.
func (a *Allocator) Get(node string) (netip.Prefix, bool) {
	p, ok := a.byNode[node]
	return p, ok
}

// Occupy records that node holds cidr (as read back from its Node). It
// fails with ErrConflict when cidr is not a /24 inside the cluster CIDR
// or another node holds it; a node that held another subnet moves.
func (a *Allocator) Occupy(node, cidr string) error {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Errorf("node %s: pod CIDR %q: %w", node, cidr, ErrConflict)
	}
	if p.Bits() != SubnetBits || p.Masked() != p || !a.cluster.Contains(p.Addr()) {
		return fmt.Errorf("node %s: pod CIDR %s is not a /%d of %s: %w", node, cidr, SubnetBits, a.cluster, ErrConflict)
	}
	if owner, ok := a.byCIDR[p]; ok && owner != node {
		return fmt.Errorf("node %s: pod CIDR %s already belongs to node %s: %w", node, cidr, owner, ErrConflict)
	}
	a.Release(node)
	a.byCIDR[p] = node
	a.byNode[node] = p
	return nil
}

// Allocate returns node's subnet, taking the lowest free /24 when it has
// none. ErrFull when none is free.
func (a *Allocator) Allocate(node string) (netip.Prefix, error) {
	if p, ok := a.byNode[node]; ok {
		return p, nil
	}
	n := a.size()
	for i := a.low; i < n; i++ {
		p := a.subnet(i)
		if _, taken := a.byCIDR[p]; !taken {
			a.byCIDR[p] = node
			a.byNode[node] = p
			a.low = i + 1
			return p, nil
		}
	}
	a.low = n
	return netip.Prefix{}, fmt.Errorf("node %s: all %d /%d subnets of %s are taken: %w", node, n, SubnetBits, a.cluster, ErrFull)
}

// Release frees node's subnet, if it has one.
func (a *Allocator) Release(node string) {
	if p, ok := a.byNode[node]; ok {
		delete(a.byNode, node)
		delete(a.byCIDR, p)
		a.low = min(a.low, a.index(p))
	}
}

// Nodes lists the nodes holding a subnet, sorted.
func (a *Allocator) Nodes() []string {
	out := make([]string, 0, len(a.byNode))
	for n := range a.byNode {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
