package tlsutil

import (
	"net"
	"net/netip"
	"reflect"
	"testing"
)

func ipnet(s string) net.Addr {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	n.IP = ip
	return n
}

func TestLocalSANs(t *testing.T) {
	addrs := []net.Addr{
		ipnet("127.0.0.1/8"),
		ipnet("192.168.1.20/24"),
		ipnet("10.42.0.1/24"),                 // the pod bridge: stable, kept
		ipnet("fe80::1c2d:3eff:fe4f:5a6b/64"), // a veth's link-local: dropped
		ipnet("169.254.10.1/16"),              // IPv4 link-local: dropped
		ipnet("2001:db8::5/64"),
		ipnet("::1/128"),
		&net.IPAddr{IP: net.ParseIP("192.168.1.20")}, // duplicate
		&net.UnixAddr{Name: "/x", Net: "unix"},       // not an IP: ignored
	}
	got, err := localSANs("Edge-01", addrs, []string{"skiff.example.com", "203.0.113.7", " lb.example.com "})
	if err != nil {
		t.Fatalf("localSANs: %v", err)
	}
	want := SANs{
		DNSNames: []string{"edge-01", "lb.example.com", "localhost", "skiff.example.com"},
		IPs: []netip.Addr{
			netip.MustParseAddr("10.42.0.1"), netip.MustParseAddr("127.0.0.1"),
			netip.MustParseAddr("192.168.1.20"), netip.MustParseAddr("203.0.113.7"),
			netip.MustParseAddr("::1"), netip.MustParseAddr("2001:db8::5"),
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("localSANs = %v; want %v", got, want)
	}
}

func TestParseSANs(t *testing.T) {
	tests := []struct {
		in      []string
		want    SANs
		wantErr bool
	}{
		{in: nil, want: SANs{}},
		{in: []string{"a.example", "10.1.2.3", "fd00::1"}, want: SANs{
			DNSNames: []string{"a.example"},
			IPs:      []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("fd00::1")},
		}},
		{in: []string{""}, wantErr: true},
		{in: []string{"bad name"}, wantErr: true},
		{in: []string{"bäd.example"}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseSANs(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseSANs(%q) error = %v; want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSANs(%q) = %v; want %v", tt.in, got, tt.want)
		}
	}
}

func TestLocalSANsOnThisMachine(t *testing.T) {
	s, err := LocalSANs([]string{"extra.example"})
	if err != nil {
		t.Fatalf("LocalSANs: %v", err)
	}
	for _, ip := range []string{"127.0.0.1", "::1"} {
		found := false
		for _, a := range s.IPs {
			found = found || a == netip.MustParseAddr(ip)
		}
		if !found {
			t.Errorf("LocalSANs IPs = %v; want %s among them", s.IPs, ip)
		}
	}
}
