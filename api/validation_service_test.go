package api

import (
	"encoding/json"
	"fmt"
	"testing"
)

func validService() *Service {
	s := &Service{
		ObjectMeta: ObjectMeta{Name: "web", Namespace: "default"},
		Spec: ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []ServicePort{{Name: "http", Port: 80, TargetPort: FromString("http")}, {Name: "dns", Port: 53, Protocol: ProtocolUDP}},
		},
	}
	SetDefaults(s)
	return s
}

func TestSetDefaultsService(t *testing.T) {
	s := &Service{Spec: ServiceSpec{Type: ServiceTypeNodePort, ClusterIP: "10.43.0.5", Ports: []ServicePort{{Port: 80}}}}
	SetDefaults(s)
	p := s.Spec.Ports[0]
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"protocol", p.Protocol, ProtocolTCP},
		{"targetPort", p.TargetPort, FromInt(80)},
		{"sessionAffinity", s.Spec.SessionAffinity, SessionAffinityNone},
		{"externalTrafficPolicy", s.Spec.ExternalTrafficPolicy, TrafficPolicyCluster},
		{"internalTrafficPolicy", *s.Spec.InternalTrafficPolicy, TrafficPolicyCluster},
		{"clusterIPs", fmt.Sprint(s.Spec.ClusterIPs), "[10.43.0.5]"},
		{"ipFamilies", fmt.Sprint(s.Spec.IPFamilies), "[IPv4]"},
	} {
		if c.got != c.want {
			t.Errorf("SetDefaultsService: %s = %v; want %v", c.name, c.got, c.want)
		}
	}
	plain := &Service{Spec: ServiceSpec{Ports: []ServicePort{{Port: 80}}}}
	SetDefaults(plain)
	if plain.Spec.Type != ServiceTypeClusterIP || plain.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("SetDefaultsService(plain) type %q externalTrafficPolicy %q; want ClusterIP and none", plain.Spec.Type, plain.Spec.ExternalTrafficPolicy)
	}
}

func TestValidateService(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Service)
		want   []fe
	}{
		{"valid", func(*Service) {}, nil},
		{"headless without ports", func(s *Service) { s.Spec.ClusterIP = ClusterIPNone; s.Spec.Ports = nil }, nil},
		{"node port", func(s *Service) { s.Spec.Type = ServiceTypeNodePort; s.Spec.Ports[0].NodePort = 30080 }, nil},
		{"name not DNS-1035", func(s *Service) { s.Name = "1web" }, []fe{inv("metadata.name")}},
		{"no ports", func(s *Service) { s.Spec.Ports = nil }, []fe{req("spec.ports")}},
		{"bad type", func(s *Service) { s.Spec.Type = "Magic" }, []fe{nsup("spec.type")}},
		{"bad affinity", func(s *Service) { s.Spec.SessionAffinity = "Sticky" }, []fe{nsup("spec.sessionAffinity")}},
		{"bad cluster IP", func(s *Service) { s.Spec.ClusterIP = "10.43.0.300"; s.Spec.ClusterIPs = []string{"10.43.0.300"} }, []fe{inv("spec.clusterIP")}},
		{"clusterIPs mismatch", func(s *Service) { s.Spec.ClusterIP = "10.43.0.3"; s.Spec.ClusterIPs = []string{"10.43.0.4"} }, []fe{inv("spec.clusterIPs[0]")}},
		{"headless node port", func(s *Service) {
			s.Spec.Type = ServiceTypeNodePort
			s.Spec.ClusterIP = ClusterIPNone
			s.Spec.ClusterIPs = []string{ClusterIPNone}
			s.Spec.ExternalTrafficPolicy = TrafficPolicyCluster
		}, []fe{inv("spec.clusterIP")}},
		{"ports unnamed", func(s *Service) { s.Spec.Ports[1].Name = "" }, []fe{req("spec.ports[1].name")}},
		{"ports duplicate", func(s *Service) { s.Spec.Ports[1] = s.Spec.Ports[0] }, []fe{dup("spec.ports[1].name"), dup("spec.ports[1]")}},
		{"port range", func(s *Service) { s.Spec.Ports[0].Port = 70000 }, []fe{inv("spec.ports[0].port")}},
		{"protocol", func(s *Service) { s.Spec.Ports[0].Protocol = "ICMP" }, []fe{nsup("spec.ports[0].protocol")}},
		{"target port name", func(s *Service) { s.Spec.Ports[0].TargetPort = FromString("-x-") }, []fe{inv("spec.ports[0].targetPort")}},
		{"target port number", func(s *Service) { s.Spec.Ports[0].TargetPort = FromInt(-1) }, []fe{inv("spec.ports[0].targetPort")}},
		{"node port on ClusterIP", func(s *Service) { s.Spec.Ports[0].NodePort = 30001 }, []fe{forb("spec.ports[0].nodePort")}},
		{"external policy on ClusterIP", func(s *Service) { s.Spec.ExternalTrafficPolicy = TrafficPolicyLocal }, []fe{inv("spec.externalTrafficPolicy")}},
		{"bad external policy", func(s *Service) { s.Spec.Type = ServiceTypeNodePort; s.Spec.ExternalTrafficPolicy = "Nearby" }, []fe{nsup("spec.externalTrafficPolicy")}},
		{"bad internal policy", func(s *Service) { s.Spec.InternalTrafficPolicy = ptrTo("Nearby") }, []fe{nsup("spec.internalTrafficPolicy")}},
		{"selector", func(s *Service) { s.Spec.Selector = map[string]string{"a b": "c"} }, []fe{inv("spec.selector")}},
		{"external name", func(s *Service) { s.Spec.Type = ServiceTypeExternalName; s.Spec.ExternalName = "db.example.com" }, nil},
		{"external name missing", func(s *Service) { s.Spec.Type = ServiceTypeExternalName }, []fe{req("spec.externalName")}},
		{"external name on ClusterIP", func(s *Service) { s.Spec.ExternalName = "db.example.com" }, []fe{forb("spec.externalName")}},
	}
	for _, tc := range tests {
		s := validService()
		tc.mutate(s)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(s), tc.want...)
	}
}

func TestValidateServiceUpdate(t *testing.T) {
	old := validService()
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.43.0.9", []string{"10.43.0.9"}
	n := validService()
	n.Spec.ClusterIP, n.Spec.ClusterIPs = "10.43.0.10", []string{"10.43.0.10"}
	checkErrs(t, "ValidateUpdate(cluster IP changed)", ValidateUpdate(n, old), inv("spec.clusterIP"))
	n.Spec.ClusterIP, n.Spec.ClusterIPs = "10.43.0.9", []string{"10.43.0.9"}
	n.Spec.Type = ServiceTypeNodePort
	SetDefaults(n)
	checkErrs(t, "ValidateUpdate(to NodePort)", ValidateUpdate(n, old))
}

func validSlice() *EndpointSlice {
	s := &EndpointSlice{
		ObjectMeta:  ObjectMeta{Name: "web-abc", Namespace: "default"},
		AddressType: AddressTypeIPv4,
		Endpoints:   []Endpoint{{Addresses: []string{"10.42.0.5"}, Conditions: EndpointConditions{Ready: ptrTo(true)}}},
		Ports:       []EndpointPort{{Name: ptrTo("http"), Port: ptrTo(int32(8080))}},
	}
	SetDefaults(s)
	return s
}

func TestValidateEndpointSlice(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*EndpointSlice)
		want   []fe
	}{
		{"valid", func(*EndpointSlice) {}, nil},
		{"no address type", func(s *EndpointSlice) { s.AddressType = "" }, []fe{req("addressType")}},
		{"bad address type", func(s *EndpointSlice) { s.AddressType = "IPX" }, []fe{nsup("addressType")}},
		{"v6 in v4 slice", func(s *EndpointSlice) { s.Endpoints[0].Addresses[0] = "fd00::1" }, []fe{inv("endpoints[0].addresses[0]")}},
		{"no addresses", func(s *EndpointSlice) { s.Endpoints[0].Addresses = nil }, []fe{req("endpoints[0].addresses")}},
		{"port missing", func(s *EndpointSlice) { s.Ports[0].Port = nil }, []fe{req("ports[0].port")}},
		{"port protocol", func(s *EndpointSlice) { s.Ports[0].Protocol = ptrTo(Protocol("X")) }, []fe{nsup("ports[0].protocol")}},
		{"hostname", func(s *EndpointSlice) { s.Endpoints[0].Hostname = ptrTo("A_B") }, []fe{inv("endpoints[0].hostname")}},
	}
	for _, tc := range tests {
		s := validSlice()
		tc.mutate(s)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(s), tc.want...)
	}
	ep := &Endpoints{ObjectMeta: ObjectMeta{Name: "web", Namespace: "default"}, Subsets: []EndpointSubset{{
		Addresses: []EndpointAddress{{IP: "10.42.0.5"}, {IP: "nope"}},
		Ports:     []EndpointPort{{Port: ptrTo(int32(80)), Protocol: ptrTo(ProtocolTCP)}},
	}}}
	checkErrs(t, "Validate(Endpoints with a bad IP)", Validate(ep), inv("subsets[0].addresses[1].ip"))
}

// FuzzValidateService checks that defaulting and validating any Service
// or EndpointSlice that decodes never panics and that defaulting is
// idempotent.
func FuzzValidateService(f *testing.F) {
	if b, err := json.Marshal(validService()); err == nil {
		f.Add(b)
	}
	if b, err := json.Marshal(validSlice()); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, obj := range []Object{&Service{}, &EndpointSlice{}, &Endpoints{}} {
			if err := DecodeJSON(data, obj); err != nil {
				continue
			}
			SetDefaults(obj)
			once, err := json.Marshal(obj)
			if err != nil {
				continue
			}
			SetDefaults(obj)
			if twice, _ := json.Marshal(obj); string(once) != string(twice) {
				t.Errorf("SetDefaults(%T) is not idempotent:\n%s\n%s", obj, once, twice)
			}
			if errs := Validate(obj); errs == nil {
				if errs := ValidateUpdate(obj, obj); errs != nil {
					t.Errorf("ValidateUpdate(valid %T, itself) = %v", obj, errs)
				}
			}
		}
	})
}
