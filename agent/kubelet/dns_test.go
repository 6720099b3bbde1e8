package kubelet

import (
	"testing"

	"github.com/skiffhq/skiff/api"
)

func TestPodResolvConf(t *testing.T) {
	host := []byte("# host\nnameserver 127.0.0.53\nnameserver 192.0.2.53\nsearch lan example.com\noptions edns0 ndots:1\n")
	two := "2"
	tests := []struct {
		name   string
		policy string
		cfg    *api.PodDNSConfig
		dns    string
		want   string
	}{
		{"ClusterFirst", "", nil, "10.43.0.10",
			"nameserver 10.43.0.10\nsearch shop.svc.cluster.local svc.cluster.local cluster.local lan example.com\noptions ndots:5\n"},
		{"ClusterFirst without a cluster DNS is Default", api.DNSClusterFirst, nil, "",
			"nameserver 192.0.2.53\nsearch lan example.com\noptions edns0 ndots:1\n"},
		{"Default", api.DNSDefault, nil, "10.43.0.10",
			"nameserver 192.0.2.53\nsearch lan example.com\noptions edns0 ndots:1\n"},
		{"None with dnsConfig", api.DNSNone, &api.PodDNSConfig{Nameservers: []string{"1.2.3.4"}, Searches: []string{"a.example"}, Options: []api.PodDNSConfigOption{{Name: "ndots", Value: &two}}}, "10.43.0.10",
			"nameserver 1.2.3.4\nsearch a.example\noptions ndots:2\n"},
		{"ClusterFirst plus dnsConfig", api.DNSClusterFirst, &api.PodDNSConfig{Nameservers: []string{"10.43.0.10", "1.1.1.1"}, Searches: []string{"lan"}, Options: []api.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "rotate"}}}, "10.43.0.10",
			"nameserver 10.43.0.10\nnameserver 1.1.1.1\nsearch shop.svc.cluster.local svc.cluster.local cluster.local lan example.com\noptions ndots:2 rotate\n"},
	}
	for _, tc := range tests {
		pod := &api.Pod{ObjectMeta: api.ObjectMeta{Namespace: "shop", Name: "p"}, Spec: api.PodSpec{DNSPolicy: tc.policy, DNSConfig: tc.cfg}}
		if got := string(podResolvConf(pod, host, tc.dns, "cluster.local")); got != tc.want {
			t.Errorf("podResolvConf(%s) =\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
