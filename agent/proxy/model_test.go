package proxy

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/api"
)

func ptr[T any](v T) *T { return &v }

func svc(name, ip string, mutate func(*api.Service)) *api.Service {
	s := &api.Service{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name}, Spec: api.ServiceSpec{
		ClusterIP: ip, Selector: map[string]string{"app": name},
		Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: api.FromString("http")}, {Name: "dns", Port: 53, Protocol: api.ProtocolUDP}},
	}}
	if mutate != nil {
		mutate(s)
	}
	api.SetDefaults(s)
	return s
}

func slice(svcName string, eps ...api.Endpoint) *api.EndpointSlice {
	return &api.EndpointSlice{
		ObjectMeta:  api.ObjectMeta{Namespace: "default", Name: svcName + "-x", Labels: map[string]string{api.LabelServiceName: svcName}},
		AddressType: api.AddressTypeIPv4, Endpoints: eps,
		Ports: []api.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(api.ProtocolTCP)}, {Name: ptr("dns"), Port: ptr(int32(5353)), Protocol: ptr(api.ProtocolUDP)}},
	}
}

func endpoint(ip, node string, ready, serving bool) api.Endpoint {
	return api.Endpoint{Addresses: []string{ip}, NodeName: ptr(node), Conditions: api.EndpointConditions{Ready: &ready, Serving: &serving}}
}

func TestBuild(t *testing.T) {
	services := []*api.Service{
		svc("web", "10.43.0.5", func(s *api.Service) { s.Spec.Type = api.ServiceTypeNodePort; s.Spec.Ports[0].NodePort = 30080 }),
		svc("headless", "None", nil),
		svc("dns", "10.43.0.10", func(s *api.Service) { s.Spec.Selector = nil }),
		svc("draining", "10.43.0.6", nil),
	}
	slices := []*api.EndpointSlice{
		slice("web", endpoint("10.42.1.2", "n1", true, true), endpoint("10.42.2.2", "n2", true, true), endpoint("10.42.1.3", "n1", false, false)),
		slice("draining", endpoint("10.42.1.9", "n1", false, true)),
	}
	st := Build(services, slices, Options{NodeName: "n1", LocalServices: map[netip.Addr]netip.Addr{netip.MustParseAddr("10.43.0.10"): netip.MustParseAddr("10.42.1.1")}})
	got := map[string]*Port{}
	for i := range st.Ports {
		got[st.Ports[i].Key()] = &st.Ports[i]
	}
	if len(got) != 6 {
		t.Fatalf("Build() ports = %d; want 6 (headless gives none)", len(got))
	}
	web := got["default/web:http/6"]
	if web == nil || web.NodePort != 30080 || web.Port != 80 || len(web.Endpoints) != 2 ||
		web.Endpoints[0] != (Endpoint{IP: netip.MustParseAddr("10.42.1.2"), Port: 8080, Local: true}) || web.Endpoints[1].Local {
		t.Errorf("web:http = %+v; want node port 30080 and the two ready endpoints, the first local", web)
	}
	if d := got["default/dns:dns/17"]; d == nil || len(d.Endpoints) != 1 || d.Endpoints[0].IP != netip.MustParseAddr("10.42.1.1") || d.Endpoints[0].Port != 53 {
		t.Errorf("dns:dns = %+v; want the node's own address on port 53", d)
	}
	if d := got["default/draining:http/6"]; d == nil || len(d.Endpoints) != 1 {
		t.Errorf("draining:http = %+v; want the serving endpoint as fallback when none is ready", d)
	}
}

func TestRemovedUDP(t *testing.T) {
	old := &State{Ports: []Port{
		{Name: "a", Proto: ProtoUDP, ClusterIP: netip.MustParseAddr("10.43.0.1"), Endpoints: []Endpoint{{IP: netip.MustParseAddr("10.42.0.1"), Port: 53}, {IP: netip.MustParseAddr("10.42.0.2"), Port: 53}}},
		{Name: "b", Proto: ProtoUDP, ClusterIP: netip.MustParseAddr("10.43.0.2"), Endpoints: []Endpoint{{IP: netip.MustParseAddr("10.42.0.3"), Port: 53}}},
		{Name: "c", Proto: ProtoTCP, Endpoints: []Endpoint{{IP: netip.MustParseAddr("10.42.0.4"), Port: 80}}},
	}}
	now := &State{Ports: []Port{{Name: "a", Proto: ProtoUDP, Endpoints: []Endpoint{{IP: netip.MustParseAddr("10.42.0.1"), Port: 53}}}}}
	eps, emptied := RemovedUDP(old, now)
	if len(eps) != 2 || eps[0].IP != netip.MustParseAddr("10.42.0.2") || eps[1].IP != netip.MustParseAddr("10.42.0.3") {
		t.Errorf("RemovedUDP endpoints = %v; want 10.42.0.2 and 10.42.0.3 (TCP ignored)", eps)
	}
	if len(emptied) != 1 || emptied[0] != netip.MustParseAddr("10.43.0.2") {
		t.Errorf("RemovedUDP emptied = %v; want 10.43.0.2", emptied)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent", "services.json")
	if s, err := ReadCheckpoint(path); s != nil || err != nil {
		t.Fatalf("ReadCheckpoint(missing) = %v, %v; want nil, nil", s, err)
	}
	snap := &Snapshot{Services: []*api.Service{svc("web", "10.43.0.5", nil)}, Slices: []*api.EndpointSlice{slice("web")}}
	if err := (&Watcher{Checkpoint: path}).keepCheckpoint(snap); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpoint(path)
	if err != nil || len(got.Services) != 1 || got.Services[0].Spec.ClusterIP != "10.43.0.5" || len(got.Slices) != 1 {
		t.Fatalf("ReadCheckpoint = %+v, %v", got, err)
	}
}

// FuzzReadCheckpoint feeds arbitrary files to the checkpoint reader and
// what it accepts to Build: neither may panic.
func FuzzReadCheckpoint(f *testing.F) {
	f.Add([]byte(`{"version":1,"services":[{"metadata":{"name":"a","namespace":"d"},"spec":{"clusterIP":"10.43.0.1","ports":[{"port":80}]}}],"endpointSlices":[{"metadata":{"name":"a-1","namespace":"d","labels":{"kubernetes.io/service-name":"a"}},"addressType":"IPv4","endpoints":[{"addresses":["10.42.0.2"]}],"ports":[{"port":8080}]}]}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "services.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		snap, err := ReadCheckpoint(path)
		if err != nil || snap == nil {
			return
		}
		Build(snap.Services, snap.Slices, Options{NodeName: "n"})
	})
}

func TestBuildSkipsNil(t *testing.T) {
	if st := Build([]*api.Service{nil}, []*api.EndpointSlice{nil}, Options{}); len(st.Ports) != 0 {
		t.Errorf("Build(nil entries) = %+v; want no ports", st)
	}
}
