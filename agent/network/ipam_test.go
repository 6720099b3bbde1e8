package network

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func TestAllocateNextFitReuseAndExhaust(t *testing.T) {
	sn, err := parseSubnet("10.42.3.0/29") // .1 gateway, .2-.6 pods, .7 broadcast
	if err != nil {
		t.Fatal(err)
	}
	st := ipamState{}
	want := []string{"10.42.3.2", "10.42.3.3", "10.42.3.4", "10.42.3.5", "10.42.3.6"}
	for i, w := range want {
		uid := string(rune('a' + i))
		a, err := st.allocate(sn, uid, "ns/"+uid, nil)
		if err != nil || a.String() != w {
			t.Fatalf("allocate(%q) = %v, %v; want %s", uid, a, err, w)
		}
	}
	if a, err := st.allocate(sn, "c", "ns/c", nil); err != nil || a.String() != "10.42.3.4" {
		t.Fatalf("allocate(c) again = %v, %v; want its own 10.42.3.4", a, err)
	}
	if _, err := st.allocate(sn, "z", "ns/z", nil); !errors.Is(err, ErrExhausted) {
		t.Fatalf("allocate on a full subnet = %v; want ErrExhausted", err)
	}
	if _, ok := st.Pods["z"]; ok {
		t.Fatal("a failed allocation left a record")
	}
	delete(st.Pods, "b") // .3 free; next-fit continues after .6 and wraps
	if a, err := st.allocate(sn, "z", "ns/z", nil); err != nil || a.String() != "10.42.3.3" {
		t.Fatalf("allocate(z) = %v, %v; want 10.42.3.3", a, err)
	}
}

func TestStatePersistsAcrossLoad(t *testing.T) {
	dir := t.TempDir()
	st, err := loadState(dir)
	if err != nil || len(st.Pods) != 0 {
		t.Fatalf("loadState(empty dir) = %+v, %v; want empty", st, err)
	}
	sn, _ := parseSubnet("10.42.0.0/24")
	st.PodCIDR = "10.42.0.0/24"
	ports := []HostPort{{Protocol: "TCP", HostPort: 8080, ContainerPort: 80}}
	if _, err := st.allocate(sn, "u1", "default/p", ports); err != nil {
		t.Fatal(err)
	}
	if err := saveState(dir, st); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.PodCIDR != st.PodCIDR || got.Pods["u1"].IP != "10.42.0.2" || len(got.Pods["u1"].HostPorts) != 1 || got.Last != "10.42.0.2" {
		t.Fatalf("loadState = %+v; want what was saved", got)
	}
}

func TestParseSubnetRejects(t *testing.T) {
	for _, c := range []string{"", "x", "10.0.0.1/24", "fd00::/64", "10.0.0.0/31"} {
		if _, err := parseSubnet(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("parseSubnet(%q) = %v; want ErrInvalid", c, err)
		}
	}
}

func nodeObj(name, cidr, ip string) *api.Node {
	n := &api.Node{ObjectMeta: api.ObjectMeta{Name: name}, Spec: api.NodeSpec{PodCIDR: cidr}}
	if ip != "" {
		n.Status.Addresses = []api.NodeAddress{{Type: api.NodeHostName, Address: name}, {Type: api.NodeInternalIP, Address: ip}}
	}
	return n
}

func TestPeersOf(t *testing.T) {
	cluster := netip.MustParsePrefix("10.42.0.0/16")
	deleting := nodeObj("gone", "10.42.9.0/24", "192.168.1.9")
	deleting.DeletionTimestamp = api.NewTimePtr(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	nodes := []*api.Node{
		nodeObj("self", "10.42.0.0/24", "192.168.1.1"),
		nodeObj("b", "10.42.1.0/24", "192.168.1.2"),
		nodeObj("a", "10.42.2.0/24", "192.168.1.3"),
		nodeObj("noip", "10.42.3.0/24", ""),
		nodeObj("nocidr", "", "192.168.1.5"),
		nodeObj("outside", "10.43.0.0/24", "192.168.1.6"),
		nodeObj("dup", "10.42.1.0/24", "192.168.1.7"), // claims b's subnet; "b" < "dup"
		nodeObj("v6", "10.42.4.0/24", "fd00::1"),
		deleting,
		nil,
	}
	got := peersOf(PeersOf(nodes), "self", cluster)
	want := []Peer{
		{Node: "a", PodCIDR: netip.MustParsePrefix("10.42.2.0/24"), NodeIP: netip.MustParseAddr("192.168.1.3")},
		{Node: "b", PodCIDR: netip.MustParsePrefix("10.42.1.0/24"), NodeIP: netip.MustParseAddr("192.168.1.2")},
	}
	if len(got) != len(want) {
		t.Fatalf("peersOf = %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("peersOf[%d] = %+v; want %+v", i, got[i], want[i])
		}
	}
}

func TestVTEPAddressing(t *testing.T) {
	p := netip.MustParsePrefix("10.42.3.0/24")
	if got := vtepMAC(p).String(); got != "0a:58:0a:2a:03:00" {
		t.Errorf("vtepMAC(%s) = %s; want 0a:58:0a:2a:03:00", p, got)
	}
	if got := vtepAddr(p).String(); got != "10.42.3.0" {
		t.Errorf("vtepAddr(%s) = %s; want 10.42.3.0", p, got)
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{NodeName: "n", StateDir: "/tmp/x"}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	for _, c := range []Config{
		{StateDir: "/x"},
		{NodeName: "n"},
		{NodeName: "n", StateDir: "/x", ClusterCIDR: "nope"},
		{NodeName: "n", StateDir: "/x", NodeIP: "fd00::1"},
		{NodeName: "n", StateDir: "/x", Bridge: "a-name-that-is-too-long"},
		{NodeName: "n", StateDir: "/x", MTU: 10},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil; want an error", c)
		}
	}
}
