package servicealloc

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/skiffhq/skiff/api"
)

// Defaults, as SPEC.md fixes them.
const (
	DefaultServiceCIDR   = "10.43.0.0/16"
	DefaultNodePortRange = "30000-32767"
	// maxCIDRBits bounds the range size: at least a /28 (14 usable
	// addresses), at most 2^20 addresses so the bitmap stays small.
	minPrefixBits = 12
	maxPrefixBits = 28
)

// Errors an allocation can fail with; the API server turns them into 422.
var (
	ErrFull        = errors.New("range is full")
	ErrAllocated   = errors.New("provided address is already allocated")
	ErrNotInRange  = errors.New("provided address is not in the valid range")
	ErrPortInUse   = errors.New("provided port is already allocated")
	ErrPortInvalid = errors.New("provided port is not in the valid range")
)

// PortRange is an inclusive range of ports.
type PortRange struct{ Base, Max int }

// ParsePortRange parses "30000-32767".
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, ok := strings.Cut(s, "-")
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
		return PortRange{}, fmt.Errorf("node port range %q: want LOW-HIGH within 1-65535", s)
	}
	return PortRange{Base: a, Max: b}, nil
}

// String returns "LOW-HIGH".
func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Base, r.Max) }

// Config says what an Allocator hands out.
type Config struct {
	ServiceCIDR   string // default DefaultServiceCIDR
	NodePortRange string // default DefaultNodePortRange
	// Rand picks free slots (tests seed it); default a random source.
	Rand *rand.Rand
}

// Allocator tracks which cluster IPs and node ports are taken. It is safe
// for concurrent use.
type Allocator struct {
	prefix netip.Prefix
	size   int // usable addresses: network and broadcast excluded
	ports  PortRange
	rnd    *rand.Rand

	mu       sync.Mutex
	ips      big.Int // bit i set: address prefix.Addr()+1+i is taken
	nodePort big.Int // bit p-Base set: port p is taken (any protocol)
	usedIPs  int
	usedPort int
}

// New returns an Allocator for cfg.
func New(cfg Config) (*Allocator, error) {
	if cfg.ServiceCIDR == "" {
		cfg.ServiceCIDR = DefaultServiceCIDR
	}
	if cfg.NodePortRange == "" {
		cfg.NodePortRange = DefaultNodePortRange
	}
	p, err := netip.ParsePrefix(cfg.ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("service CIDR: %w", err)
	}
	if !p.Addr().Is4() || p.Bits() < minPrefixBits || p.Bits() > maxPrefixBits {
		return nil, fmt.Errorf("service CIDR %s: want an IPv4 prefix between /%d and /%d", cfg.ServiceCIDR, minPrefixBits, maxPrefixBits)
	}
	pr, err := ParsePortRange(cfg.NodePortRange)
	if err != nil {
		return nil, err
	}
	rnd := cfg.Rand
	if rnd == nil {
		rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return &Allocator{prefix: p.Masked(), size: 1<<(32-p.Bits()) - 2, ports: pr, rnd: rnd}, nil
}

// CIDR returns the service CIDR.
func (a *Allocator) CIDR() netip.Prefix { return a.prefix }

// PortRange returns the node port range.
func (a *Allocator) PortRange() PortRange { return a.ports }

// NthIP returns the n-th usable address of the range (1 is the first, the
// address the `kubernetes` Service takes), or false beyond the range.
func (a *Allocator) NthIP(n int) (netip.Addr, bool) {
	if n < 1 || n > a.size {
		return netip.Addr{}, false
	}
	return a.addrAt(n - 1), true
}

func (a *Allocator) addrAt(i int) netip.Addr {
	b := a.prefix.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(i) + 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// index returns the slot of ip, or an error when ip is outside the usable
// range.
func (a *Allocator) index(ip netip.Addr) (int, error) {
	if !ip.Is4() || !a.prefix.Contains(ip) {
		return 0, fmt.Errorf("%s: %w %s", ip, ErrNotInRange, a.prefix)
	}
	b, base := ip.As4(), a.prefix.Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	w := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	i := int(v-w) - 1
	if i < 0 || i >= a.size {
		return 0, fmt.Errorf("%s: %w %s", ip, ErrNotInRange, a.prefix)
	}
	return i, nil
}

// AllocateIP takes ip, or when ip is invalid (zero) a free address. It
// fails with ErrAllocated, ErrNotInRange or ErrFull.
func (a *Allocator) AllocateIP(ip netip.Addr) (netip.Addr, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ip.IsValid() {
		i, err := a.index(ip)
		if err != nil {
			return netip.Addr{}, err
		}
		if a.ips.Bit(i) == 1 {
			return netip.Addr{}, fmt.Errorf("%s: %w", ip, ErrAllocated)
		}
		a.ips.SetBit(&a.ips, i, 1)
		a.usedIPs++
		return ip, nil
	}
	i, ok := a.freeSlotLocked(&a.ips, a.size, a.usedIPs)
	if !ok {
		return netip.Addr{}, fmt.Errorf("service CIDR %s: %w", a.prefix, ErrFull)
	}
	a.ips.SetBit(&a.ips, i, 1)
	a.usedIPs++
	return a.addrAt(i), nil
}

// ReleaseIP frees ip; an address outside the range or not taken is ignored.
func (a *Allocator) ReleaseIP(ip netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i, err := a.index(ip); err == nil && a.ips.Bit(i) == 1 {
		a.ips.SetBit(&a.ips, i, 0)
		a.usedIPs--
	}
}

// AllocatePort takes port, or when port is 0 a free one. It fails with
// ErrPortInUse, ErrPortInvalid or ErrFull.
func (a *Allocator) AllocatePort(port int) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.ports.Max - a.ports.Base + 1
	if port != 0 {
		if port < a.ports.Base || port > a.ports.Max {
			return 0, fmt.Errorf("%d: %w %s", port, ErrPortInvalid, a.ports)
		}
		if a.nodePort.Bit(port-a.ports.Base) == 1 {
			return 0, fmt.Errorf("%d: %w", port, ErrPortInUse)
		}
		a.nodePort.SetBit(&a.nodePort, port-a.ports.Base, 1)
		a.usedPort++
		return port, nil
	}
	i, ok := a.freeSlotLocked(&a.nodePort, n, a.usedPort)
	if !ok {
		return 0, fmt.Errorf("node port range %s: %w", a.ports, ErrFull)
	}
	a.nodePort.SetBit(&a.nodePort, i, 1)
	a.usedPort++
	return a.ports.Base + i, nil
}

// ReleasePort frees port; a port outside the range or not taken is ignored.
func (a *Allocator) ReleasePort(port int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if port >= a.ports.Base && port <= a.ports.Max && a.nodePort.Bit(port-a.ports.Base) == 1 {
		a.nodePort.SetBit(&a.nodePort, port-a.ports.Base, 0)
		a.usedPort--
	}
}

// freeSlotLocked picks a free slot of n: a random start, then the next
// free one after it (wrapping), as Kubernetes' random-scan allocator.
func (a *Allocator) freeSlotLocked(bits *big.Int, n, used int) (int, bool) {
	if used >= n {
		return 0, false
	}
	start := a.rnd.IntN(n)
	for k := 0; k < n; k++ {
		i := (start + k) % n
		if bits.Bit(i) == 0 {
			return i, true
		}
	}
	return 0, false
}

// Used returns how many cluster IPs and node ports are taken.
func (a *Allocator) Used() (ips, ports int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usedIPs, a.usedPort
}

// Load marks what the stored Services hold as taken. Addresses outside
// the current range (the range changed) are skipped and returned, so the
// caller can report them; a duplicate (two stored Services with one
// address) is returned too.
func (a *Allocator) Load(services []*api.Service) (problems []string) {
	for _, s := range services {
		for _, ip := range clusterIPs(s) {
			if _, err := a.AllocateIP(ip); err != nil {
				problems = append(problems, fmt.Sprintf("service %s/%s cluster IP: %v", s.Namespace, s.Name, err))
			}
		}
		for _, p := range nodePorts(s) {
			if _, err := a.AllocatePort(p); err != nil {
				problems = append(problems, fmt.Sprintf("service %s/%s node port: %v", s.Namespace, s.Name, err))
			}
		}
	}
	return problems
}

// clusterIPs returns the allocated cluster IPs of s.
func clusterIPs(s *api.Service) []netip.Addr {
	if s == nil || !s.NeedsClusterIP() || s.Spec.ClusterIP == "" {
		return nil
	}
	ip, err := netip.ParseAddr(s.Spec.ClusterIP)
	if err != nil {
		return nil
	}
	return []netip.Addr{ip}
}

// nodePorts returns the distinct node ports of s.
func nodePorts(s *api.Service) []int {
	if s == nil {
		return nil
	}
	var out []int
	seen := map[int32]bool{}
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 && !seen[p.NodePort] {
			seen[p.NodePort] = true
			out = append(out, int(p.NodePort))
		}
	}
	return out
}
