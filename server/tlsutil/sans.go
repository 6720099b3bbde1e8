package tlsutil

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// SANs are the subject alternative names a serving certificate must
// cover. The zero value is usable; EnsureServerCert always adds the
// loopback names (see Normalize).
type SANs struct {
	// DNSNames are host names, matched case-insensitively.
	DNSNames []string
	// IPs are addresses; IPv4-mapped IPv6 addresses count as IPv4.
	IPs []netip.Addr
}

// loopbackSANs are covered by every serving certificate: the CLI and the
// local agent reach the server through them.
var loopbackSANs = SANs{
	DNSNames: []string{"localhost"},
	IPs:      []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()},
}

// Normalize returns s plus the loopback names (localhost, 127.0.0.1, ::1),
// with names lowercased and stripped of a trailing dot, IPs unmapped and
// zones dropped, empty entries removed, sorted and de-duplicated.
func (s SANs) Normalize() SANs {
	var out SANs
	for _, n := range slices.Concat(s.DNSNames, loopbackSANs.DNSNames) {
		if n = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(n)), "."); n != "" {
			out.DNSNames = append(out.DNSNames, n)
		}
	}
	for _, ip := range slices.Concat(s.IPs, loopbackSANs.IPs) {
		if ip.IsValid() {
			out.IPs = append(out.IPs, ip.Unmap().WithZone(""))
		}
	}
	slices.Sort(out.DNSNames)
	out.DNSNames = slices.Compact(out.DNSNames)
	slices.SortFunc(out.IPs, netip.Addr.Compare)
	out.IPs = slices.Compact(out.IPs)
	return out
}

// ParseSANs sorts --tls-san values into IPs and DNS names: a value that
// parses as an IP address is an IP SAN, anything else a DNS name. Empty
// values and values with spaces, control or non-ASCII characters are
// errors.
func ParseSANs(values []string) (SANs, error) {
	var s SANs
	for _, v := range values {
		v = strings.TrimSpace(v)
		if ip, err := netip.ParseAddr(v); err == nil {
			s.IPs = append(s.IPs, ip)
			continue
		}
		if err := checkDNSName(v); err != nil {
			return SANs{}, err
		}
		s.DNSNames = append(s.DNSNames, v)
	}
	return s, nil
}

func checkDNSName(v string) error {
	if v == "" {
		return fmt.Errorf("tls: empty subject alternative name")
	}
	for _, r := range v {
		if r <= ' ' || r >= 0x7f {
			return fmt.Errorf("tls: subject alternative name %q: want an IP address or a DNS name (ASCII, no spaces)", v)
		}
	}
	return nil
}

// LocalSANs returns the names this machine is reached by: its host name,
// the address of every network interface (except link-local, multicast and
// unspecified ones, which change as pods come and go and would force a new
// certificate on each start), and extra, parsed as by ParseSANs (the
// --tls-san values). The loopback names are added by Normalize.
func LocalSANs(extra []string) (SANs, error) {
	host, err := os.Hostname()
	if err != nil {
		return SANs{}, fmt.Errorf("tls: host name: %w", err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return SANs{}, fmt.Errorf("tls: interface addresses: %w", err)
	}
	return localSANs(host, addrs, extra)
}

// localSANs is LocalSANs with its inputs passed in.
func localSANs(host string, addrs []net.Addr, extra []string) (SANs, error) {
	s, err := ParseSANs(extra)
	if err != nil {
		return SANs{}, err
	}
	// A host name the certificate cannot carry is left out rather than
	// failing the start; it is then simply not a name the server has.
	if hs, err := ParseSANs([]string{host}); err == nil {
		s.DNSNames = append(s.DNSNames, hs.DNSNames...)
		s.IPs = append(s.IPs, hs.IPs...)
	}
	for _, a := range addrs {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		default:
			continue
		}
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			continue
		}
		addr = addr.Unmap()
		if addr.IsLinkLocalUnicast() || addr.IsMulticast() || addr.IsUnspecified() {
			continue
		}
		s.IPs = append(s.IPs, addr)
	}
	return s.Normalize(), nil
}

// missing returns the entries of want (normalized) that cert's SANs do not
// list; it does not expand wildcards, so a wanted name must appear as is.
func (want SANs) missing(dnsNames []string, ips []net.IP) []string {
	haveName := make(map[string]bool, len(dnsNames))
	for _, n := range dnsNames {
		haveName[strings.TrimSuffix(strings.ToLower(n), ".")] = true
	}
	haveIP := make(map[netip.Addr]bool, len(ips))
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok {
			haveIP[a.Unmap()] = true
		}
	}
	var out []string
	for _, n := range want.DNSNames {
		if !haveName[n] {
			out = append(out, n)
		}
	}
	for _, ip := range want.IPs {
		if !haveIP[ip] {
			out = append(out, ip.String())
		}
	}
	return out
}

func (s SANs) netIPs() []net.IP {
	out := make([]net.IP, len(s.IPs))
	for i, ip := range s.IPs {
		out[i] = net.IP(ip.AsSlice())
	}
	return out
}
