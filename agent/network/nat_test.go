package network

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestNatRules(t *testing.T) {
	pods := map[string]podRecord{
		"b": {IP: "10.42.0.3", HostPorts: []HostPort{{Protocol: "TCP", HostPort: 8080, ContainerPort: 80}}}, // loses to a
		"a": {IP: "10.42.0.2", HostPorts: []HostPort{
			{Protocol: "TCP", HostPort: 8080, ContainerPort: 8000},
			{Protocol: "UDP", HostPort: 8080, ContainerPort: 53, HostIP: "127.0.0.1"},
			{Protocol: "SCTP", HostPort: 9, ContainerPort: 9},
			{Protocol: "TCP", HostPort: 70000, ContainerPort: 9},
			{Protocol: "TCP", HostPort: 81, ContainerPort: 81, HostIP: "not-an-ip"},
		}},
		"c": {IP: "garbage", HostPorts: []HostPort{{HostPort: 1, ContainerPort: 1}}},
	}
	got := natRules(pods)
	if len(got) != 2 {
		t.Fatalf("natRules = %+v; want 2 rules", got)
	}
	if r := got[0]; r.Pod != "a" || r.Proto != unix.IPPROTO_TCP || r.HostPort != 8080 || r.PodPort != 8000 || r.HostIP.IsValid() {
		t.Errorf("natRules[0] = %+v; want a's TCP 8080->8000 on every address", r)
	}
	if r := got[1]; r.Proto != unix.IPPROTO_UDP || r.HostIP.String() != "127.0.0.1" || r.PodIP.String() != "10.42.0.2" {
		t.Errorf("natRules[1] = %+v; want a's UDP on 127.0.0.1", r)
	}
}
