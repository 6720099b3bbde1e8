package servicealloc

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/skiffhq/skiff/api"
)

func TestClaimsOfAService(t *testing.T) {
	svc := &api.Service{Spec: api.ServiceSpec{ClusterIP: "10.43.0.9", Type: api.ServiceTypeNodePort,
		Ports: []api.ServicePort{{Port: 53, Protocol: api.ProtocolUDP, NodePort: 30053}, {Port: 53, Protocol: api.ProtocolTCP, NodePort: 30053}, {Port: 80, NodePort: 30080}}}}
	got := Claims(svc)
	want := []string{"clusterip/10.43.0.9", "nodeport/30053", "nodeport/30080"}
	if !slices.Equal(got, want) {
		t.Errorf("Claims(%v) = %q; want %q", svc.Spec, got, want)
	}
	headless := &api.Service{Spec: api.ServiceSpec{ClusterIP: api.ClusterIPNone}}
	if got := Claims(headless); len(got) != 0 {
		t.Errorf("Claims(headless) = %q; want none", got)
	}
	if got := Claims(&api.ConfigMap{}); got != nil {
		t.Errorf("Claims(ConfigMap) = %q; want nil", got)
	}
}

// TestHeldKeepsTheSlotTakenAndSaysWhetherToRetry models a store refusal:
// what the allocator chose can be chosen again (retry), what the client
// asked for cannot; either way the slot stays taken after Rollback.
func TestHeldKeepsTheSlotTakenAndSaysWhetherToRetry(t *testing.T) {
	a := newAlloc(t, "10.43.0.0/28", "30000-30003")
	svc := &api.Service{Spec: api.ServiceSpec{Type: api.ServiceTypeNodePort, Ports: []api.ServicePort{{Port: 80, Protocol: api.ProtocolTCP}}}}
	r, errs := a.Reserve(svc, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	ip := netip.MustParseAddr(svc.Spec.ClusterIP)
	if !r.Held(ipClaim(ip)) {
		t.Errorf("Held(%s) chosen by the allocator = false; want true", ip)
	}
	port := int(svc.Spec.Ports[0].NodePort)
	if !r.Held(portClaim(port)) {
		t.Errorf("Held(%d) chosen by the allocator = false; want true", port)
	}
	r.Rollback()
	if ips, ports := a.Used(); ips != 1 || ports != 1 {
		t.Errorf("Used() after Held and Rollback = %d, %d; want 1, 1 (held elsewhere)", ips, ports)
	}

	asked := &api.Service{Spec: api.ServiceSpec{ClusterIP: "10.43.0.5", Ports: []api.ServicePort{{Port: 80}}}}
	r, errs = a.Reserve(asked, nil)
	if errs != nil {
		t.Fatal(errs)
	}
	if r.Held("clusterip/10.43.0.5") {
		t.Error("Held(10.43.0.5) the client asked for = true; want false")
	}
	r.Rollback()
	fe := HeldError(asked, "clusterip/10.43.0.5")
	if len(fe) != 1 || fe[0].Field != "spec.clusterIPs" {
		t.Errorf("HeldError = %v; want one error on spec.clusterIPs", fe)
	}

	// Resync forgets what no stored Service holds.
	a.Resync([]*api.Service{asked})
	if ips, ports := a.Used(); ips != 1 || ports != 0 {
		t.Errorf("Used() after Resync = %d, %d; want 1, 0", ips, ports)
	}
}
