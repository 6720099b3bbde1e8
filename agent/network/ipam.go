package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
)

// Errors of the pod network (wrapped; test with errors.Is).
var (
	// ErrNotReady: the node has no podCIDR yet, or the bridge is not set up.
	ErrNotReady = errors.New("network: not ready")
	// ErrExhausted: every address of the node's podCIDR is in use.
	ErrExhausted = errors.New("network: pod CIDR exhausted")
	// ErrInvalid: bad input (a pod uid, a netns path, a CIDR).
	ErrInvalid = errors.New("network: invalid input")
)

// HostPort is one published port of a pod.
type HostPort struct {
	Protocol      string `json:"protocol"` // "TCP" or "UDP"
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	HostIP        string `json:"hostIP,omitempty"` // "" = every node address
}

// podRecord is what the network keeps of one pod.
type podRecord struct {
	IP        string     `json:"ip"`
	Name      string     `json:"name,omitempty"` // "namespace/name", for logs
	HostPorts []HostPort `json:"hostPorts,omitempty"`
}

// ipamState is the persisted allocation state: ipam.json.
type ipamState struct {
	PodCIDR string               `json:"podCIDR"`
	Last    string               `json:"last,omitempty"` // last address handed out (next-fit)
	Pods    map[string]podRecord `json:"pods"`
}

// subnet is a node's /24 (or any IPv4 prefix) with its gateway.
type subnet struct {
	prefix  netip.Prefix
	gateway netip.Addr // first address after the network address
}

func parseSubnet(cidr string) (subnet, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() || p.Bits() > 30 || p.Masked() != p {
		return subnet{}, fmt.Errorf("pod CIDR %q: want a masked IPv4 prefix of /30 or larger: %w", cidr, ErrInvalid)
	}
	return subnet{prefix: p, gateway: p.Addr().Next()}, nil
}

// broadcast is the last address of the prefix.
func (s subnet) broadcast() netip.Addr {
	a := s.prefix.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= 1<<(32-s.prefix.Bits()) - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// allocate returns uid's address: its recorded one, else the next free
// address after st.Last (wrapping), skipping the network, gateway and
// broadcast addresses. It changes st only on success.
func (st *ipamState) allocate(sn subnet, uid, name string, ports []HostPort) (netip.Addr, error) {
	if rec, ok := st.Pods[uid]; ok {
		if a, err := netip.ParseAddr(rec.IP); err == nil && sn.prefix.Contains(a) {
			rec.HostPorts, rec.Name = ports, name
			st.Pods[uid] = rec
			return a, nil
		}
	}
	used := map[netip.Addr]bool{}
	for _, r := range st.Pods {
		if a, err := netip.ParseAddr(r.IP); err == nil {
			used[a] = true
		}
	}
	first, last := sn.gateway.Next(), sn.broadcast().Prev()
	start := first
	if l, err := netip.ParseAddr(st.Last); err == nil && sn.prefix.Contains(l) && l.Compare(first) >= 0 && l.Compare(last) < 0 {
		start = l.Next()
	}
	a := start
	for {
		if !used[a] {
			if st.Pods == nil {
				st.Pods = map[string]podRecord{}
			}
			st.Pods[uid] = podRecord{IP: a.String(), Name: name, HostPorts: ports}
			st.Last = a.String()
			return a, nil
		}
		if a = a.Next(); a.Compare(last) > 0 {
			a = first
		}
		if a == start {
			return netip.Addr{}, fmt.Errorf("%s: %w", sn.prefix, ErrExhausted)
		}
	}
}

// uids lists the pods holding an address, sorted.
func (st *ipamState) uids() []string {
	out := make([]string, 0, len(st.Pods))
	for u := range st.Pods {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

func statePath(dir string) string { return filepath.Join(dir, "ipam.json") }

// loadState reads ipam.json; a missing file is an empty state.
func loadState(dir string) (ipamState, error) {
	b, err := os.ReadFile(statePath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return ipamState{Pods: map[string]podRecord{}}, nil
	}
	if err != nil {
		return ipamState{}, fmt.Errorf("read pod IP state: %w", err)
	}
	var st ipamState
	if err := json.Unmarshal(b, &st); err != nil {
		return ipamState{}, fmt.Errorf("read pod IP state %s: %w", statePath(dir), err)
	}
	if st.Pods == nil {
		st.Pods = map[string]podRecord{}
	}
	return st, nil
}

// saveState writes ipam.json atomically and durably (write, fsync,
// rename), so an address is on disk before any pod uses it.
func saveState(dir string, st ipamState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode pod IP state: %w", err)
	}
	return writeState(dir, b)
}

// writeState writes encoded state as saveState does.
func writeState(dir string, b []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create network state dir: %w", err)
	}
	tmp := statePath(dir) + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write pod IP state: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write pod IP state: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync pod IP state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write pod IP state: %w", err)
	}
	if err := os.Rename(tmp, statePath(dir)); err != nil {
		return fmt.Errorf("write pod IP state: %w", err)
	}
	return nil
}
