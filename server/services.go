package server

import (
	"net"
	"net/netip"
)

// apiEndpoint is the address pods reach the server at, for the endpoints
// of the `kubernetes` Service: the listen address when it is a specific,
// non-loopback one, else the machine's first global IPv4 address. It is
// invalid (no endpoints are written) when there is none.
func apiEndpoint(listenHost string, bound net.Addr) netip.AddrPort {
	tcp, ok := bound.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}
	}
	port := uint16(tcp.Port)
	if ip, err := netip.ParseAddr(listenHost); err == nil && !ip.IsUnspecified() && !ip.IsLoopback() {
		return netip.AddrPortFrom(ip.Unmap(), port)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return netip.AddrPort{}
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if ip = ip.Unmap(); ok && ip.Is4() && ip.IsGlobalUnicast() {
			return netip.AddrPortFrom(ip, port)
		}
	}
	return netip.AddrPort{}
}
