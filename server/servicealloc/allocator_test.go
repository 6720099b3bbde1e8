package servicealloc

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/skiffhq/skiff/api"
)

func newAlloc(t *testing.T, cidr, ports string) *Allocator {
	t.Helper()
	a, err := New(Config{ServiceCIDR: cidr, NodePortRange: ports, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{
		{ServiceCIDR: "10.43.0.0/30"}, {ServiceCIDR: "fd00::/112"}, {ServiceCIDR: "nope"},
		{NodePortRange: "32767-30000"}, {NodePortRange: "0-10"}, {NodePortRange: "30000"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) = nil error; want one", c)
		}
	}
}

func TestAllocateIPExhaustsAndReleases(t *testing.T) {
	a := newAlloc(t, "10.43.0.0/28", "")
	seen := map[netip.Addr]bool{}
	for i := 0; i < 14; i++ {
		ip, err := a.AllocateIP(netip.Addr{})
		if err != nil {
			t.Fatalf("AllocateIP #%d = %v", i, err)
		}
		if seen[ip] || ip == netip.MustParseAddr("10.43.0.0") || ip == netip.MustParseAddr("10.43.0.15") {
			t.Fatalf("AllocateIP #%d = %s; duplicate or network/broadcast", i, ip)
		}
		seen[ip] = true
	}
	if _, err := a.AllocateIP(netip.Addr{}); !errors.Is(err, ErrFull) {
		t.Fatalf("AllocateIP on a full range = %v; want ErrFull", err)
	}
	a.ReleaseIP(netip.MustParseAddr("10.43.0.7"))
	if ip, err := a.AllocateIP(netip.Addr{}); err != nil || ip != netip.MustParseAddr("10.43.0.7") {
		t.Fatalf("AllocateIP after release = %s, %v; want 10.43.0.7", ip, err)
	}
}

func TestAllocateRequested(t *testing.T) {
	a := newAlloc(t, "", "")
	ip := netip.MustParseAddr("10.43.0.10")
	if _, err := a.AllocateIP(ip); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ip   string
		want error
	}{{"10.43.0.10", ErrAllocated}, {"10.44.0.1", ErrNotInRange}, {"10.43.255.255", ErrNotInRange}, {"10.43.0.0", ErrNotInRange}} {
		if _, err := a.AllocateIP(netip.MustParseAddr(tc.ip)); !errors.Is(err, tc.want) {
			t.Errorf("AllocateIP(%s) = %v; want %v", tc.ip, err, tc.want)
		}
	}
	if _, err := a.AllocatePort(30080); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AllocatePort(30080); !errors.Is(err, ErrPortInUse) {
		t.Errorf("AllocatePort(30080) twice = %v; want ErrPortInUse", err)
	}
	if _, err := a.AllocatePort(80); !errors.Is(err, ErrPortInvalid) {
		t.Errorf("AllocatePort(80) = %v; want ErrPortInvalid", err)
	}
}

func svc(name, ip string, typ api.ServiceType, nodePorts ...int32) *api.Service {
	s := &api.Service{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name}, Spec: api.ServiceSpec{Type: typ, ClusterIP: ip}}
	s.Spec.Ports = []api.ServicePort{{Name: "a", Port: 80}, {Name: "b", Port: 53, Protocol: api.ProtocolUDP}}
	for i, p := range nodePorts {
		s.Spec.Ports[i].NodePort = p
	}
	api.SetDefaultsService(s)
	return s
}

func TestReserveCreateUpdateDelete(t *testing.T) {
	a := newAlloc(t, "10.43.0.0/24", "30000-30010")
	s := svc("web", "", api.ServiceTypeNodePort, 30005)
	r, errs := a.Reserve(s, nil)
	if errs != nil {
		t.Fatalf("Reserve(create) = %v", errs)
	}
	r.Commit(s, nil)
	if s.Spec.ClusterIP == "" || s.Spec.ClusterIPs[0] != s.Spec.ClusterIP || s.Spec.Ports[0].NodePort != 30005 || s.Spec.Ports[1].NodePort == 0 {
		t.Fatalf("Reserve(create) filled %+v", s.Spec)
	}
	if ips, ports := a.Used(); ips != 1 || ports != 2 {
		t.Fatalf("Used() = %d, %d; want 1, 2", ips, ports)
	}

	// A second Service asking for the same IP or port gets field errors
	// and reserves nothing.
	clash := svc("clash", s.Spec.ClusterIP, api.ServiceTypeNodePort, 30005)
	if _, errs := a.Reserve(clash, nil); len(errs) != 2 || errs[0].Field != "spec.clusterIPs" || errs[1].Field != "spec.ports[0].nodePort" {
		t.Fatalf("Reserve(clash) = %v; want spec.clusterIPs and spec.ports[0].nodePort", errs)
	}
	if ips, ports := a.Used(); ips != 1 || ports != 2 {
		t.Fatalf("Used() after a refused reserve = %d, %d; want 1, 2", ips, ports)
	}

	// An update without clusterIP or nodePorts keeps them; turning into
	// ClusterIP gives the node ports back.
	next := svc("web", "", api.ServiceTypeClusterIP)
	r, errs = a.Reserve(next, s)
	if errs != nil {
		t.Fatalf("Reserve(update) = %v", errs)
	}
	if next.Spec.ClusterIP != s.Spec.ClusterIP {
		t.Errorf("update kept cluster IP %q; want %q", next.Spec.ClusterIP, s.Spec.ClusterIP)
	}
	r.Commit(next, s)
	if ips, ports := a.Used(); ips != 1 || ports != 0 {
		t.Fatalf("Used() after NodePort→ClusterIP = %d, %d; want 1, 0", ips, ports)
	}
	a.Release(next)
	if ips, ports := a.Used(); ips != 0 || ports != 0 {
		t.Fatalf("Used() after delete = %d, %d; want 0, 0", ips, ports)
	}

	// A failed write rolls back.
	r, _ = a.Reserve(svc("x", "", api.ServiceTypeNodePort), nil)
	r.Rollback()
	if ips, ports := a.Used(); ips != 0 || ports != 0 {
		t.Fatalf("Used() after rollback = %d, %d; want 0, 0", ips, ports)
	}
}

func TestReserveHeadlessAndExternalNameTakeNothing(t *testing.T) {
	a := newAlloc(t, "", "")
	for _, s := range []*api.Service{svc("h", api.ClusterIPNone, api.ServiceTypeClusterIP), {Spec: api.ServiceSpec{Type: api.ServiceTypeExternalName, ExternalName: "x.example"}}} {
		if _, errs := a.Reserve(s, nil); errs != nil {
			t.Fatalf("Reserve(%s) = %v", s.Spec.Type, errs)
		}
	}
	if ips, ports := a.Used(); ips != 0 || ports != 0 {
		t.Fatalf("Used() = %d, %d; want 0, 0", ips, ports)
	}
}

func TestLoadRebuildsAndReportsDuplicates(t *testing.T) {
	a := newAlloc(t, "", "")
	stored := []*api.Service{svc("a", "10.43.0.5", api.ServiceTypeNodePort, 30001, 30002), svc("b", "10.43.0.5", api.ServiceTypeClusterIP), svc("c", "10.99.0.1", api.ServiceTypeClusterIP)}
	if problems := a.Load(stored); len(problems) != 2 {
		t.Errorf("Load() problems = %q; want the duplicate and the out-of-range address", problems)
	}
	if _, err := a.AllocateIP(netip.MustParseAddr("10.43.0.5")); !errors.Is(err, ErrAllocated) {
		t.Errorf("AllocateIP(loaded address) = %v; want ErrAllocated", err)
	}
	if _, err := a.AllocatePort(30002); !errors.Is(err, ErrPortInUse) {
		t.Errorf("AllocatePort(loaded port) = %v; want ErrPortInUse", err)
	}
}
