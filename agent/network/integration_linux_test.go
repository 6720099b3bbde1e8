package network

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

const (
	testCluster     = "10.244.0.0/16"
	testServiceCIDR = "10.96.0.0/16"
)

// testHost is one simulated node: a namespace and its Manager.
type testHost struct {
	name, ns, ip, cidr, stateDir string
	m                            *Manager
}

func newManager(t testing.TB, h *testHost) *Manager {
	t.Helper()
	m, err := New(Config{NodeName: h.name, StateDir: h.stateDir, ClusterCIDR: testCluster, ServiceCIDR: testServiceCIDR, HostNetNS: h.ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func newHost(t testing.TB, name, ip, cidr string) *testHost {
	h := &testHost{name: name, ns: newNS(t, "host"), ip: ip, cidr: cidr, stateDir: t.TempDir()}
	return h
}

func testPod(name string, ports ...api.ContainerPort) *api.Pod {
	return &api.Pod{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + name},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "c", Image: "busybox", Ports: ports}}}}
}

// setUp makes a pod namespace on h and sets up its network.
func setUp(t testing.TB, h *testHost, pod *api.Pod) (nsPath, ip string) {
	t.Helper()
	nsPath = newNS(t, "pod")
	ip, err := h.m.SetUpPod(context.Background(), pod.UID, nsPath, pod)
	if err != nil {
		t.Fatalf("SetUpPod(%s on %s) = %v", pod.Name, h.name, err)
	}
	return nsPath, ip
}

// TestPodNetworkTwoHostsVXLANHostPortRealNetns runs two simulated nodes
// joined by a veth "wire" and checks pod-to-pod traffic on one node and
// across the VXLAN overlay, hostPort DNAT (TCP and UDP, on 127.0.0.1 with
// curl and on the node's address), and that teardown frees the address
// and removes the rules.
func TestPodNetworkTwoHostsVXLANHostPortRealNetns(t *testing.T) {
	requireTools(t)
	a := newHost(t, "node-a", "192.168.250.1", "10.244.1.0/24")
	b := newHost(t, "node-b", "192.168.250.2", "10.244.2.0/24")
	joinHosts(t, a.ns, b.ns, a.ip, b.ip)
	nodes := []*api.Node{nodeObj(a.name, a.cidr, a.ip), nodeObj(b.name, b.cidr, b.ip)}
	for _, h := range []*testHost{a, b} {
		h.m = newManager(t, h)
		if err := h.m.Ready(); err == nil {
			t.Fatalf("%s: Ready() = nil before the podCIDR is known", h.name)
		}
		if err := h.m.SetNodes(nodes); err != nil {
			t.Fatalf("%s: SetNodes = %v", h.name, err)
		}
		if err := h.m.Ready(); err != nil {
			t.Fatalf("%s: Ready() = %v", h.name, err)
		}
	}
	if p := a.m.Peers(); len(p) != 1 || p[0].Node != b.name {
		t.Fatalf("node-a peers = %+v; want node-b", p)
	}

	web := testPod("web", api.ContainerPort{ContainerPort: 80, HostPort: 8080},
		api.ContainerPort{ContainerPort: 53, HostPort: 5353, Protocol: api.ProtocolUDP})
	webNS, webIP := setUp(t, a, web)
	if webIP != "10.244.1.2" {
		t.Fatalf("web IP = %s; want 10.244.1.2 (first after the gateway)", webIP)
	}
	if got := a.m.PodIP(web.UID); got != webIP {
		t.Fatalf("PodIP(web) = %q; want %s", got, webIP)
	}
	serveHTTP(t, listenIn(t, webNS, "tcp4", ":80"), "hello from web")
	udp := listenUDPIn(t, webNS, ":53")
	go func() {
		buf := make([]byte, 64)
		for {
			n, from, err := udp.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = udp.WriteTo(append([]byte("echo:"), buf[:n]...), from)
		}
	}()

	localNS, localIP := setUp(t, a, testPod("local"))
	remoteNS, remoteIP := setUp(t, b, testPod("remote"))
	if localIP == webIP || !strings.HasPrefix(remoteIP, "10.244.2.") {
		t.Fatalf("local IP %s, remote IP %s; want distinct addresses in each node's CIDR", localIP, remoteIP)
	}

	checks := []struct{ what, from, url string }{
		{"pod to pod, one node", localNS, "http://" + webIP + ":80/"},
		{"pod to pod, across the VXLAN", remoteNS, "http://" + webIP + ":80/"},
		{"hostPort on node-a's address, from node-b", b.ns, "http://" + a.ip + ":8080/"},
	}
	for _, c := range checks {
		body, err := httpGetIn(c.from, c.url)
		if err != nil || body != "hello from web" {
			t.Fatalf("%s: GET %s = %q, %v; want hello from web", c.what, c.url, body, err)
		}
	}
	if body, err := curlIn(a.ns, "http://127.0.0.1:8080/"); err != nil || body != "hello from web" {
		t.Fatalf("curl 127.0.0.1:8080 on node-a = %q, %v; want hello from web\n%s", body, err, nftTable(t, a.ns))
	}
	// UDP hostPort on 127.0.0.1
	conn, err := dialIn(a.ns, "udp4", "127.0.0.1:5353", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	conn.Close()
	if err != nil || string(buf[:n]) != "echo:ping" {
		t.Fatalf("UDP 127.0.0.1:5353 on node-a = %q, %v; want echo:ping", buf[:n], err)
	}
	// the other way across the overlay, and pod-to-node
	rl := listenIn(t, remoteNS, "tcp4", ":9000")
	serveHTTP(t, rl, "hello from remote")
	if body, err := httpGetIn(localNS, "http://"+remoteIP+":9000/"); err != nil || body != "hello from remote" {
		t.Fatalf("pod on a to pod on b = %q, %v", body, err)
	}
	if !strings.Contains(nftTable(t, a.ns), "masquerade") {
		t.Fatalf("node-a table has no masquerade rule:\n%s", nftTable(t, a.ns))
	}

	// teardown: address freed, veth and rules gone
	if err := a.m.TearDownPod(context.Background(), web.UID); err != nil {
		t.Fatal(err)
	}
	if got := a.m.PodIP(web.UID); got != "" {
		t.Fatalf("PodIP(web) after teardown = %q; want empty", got)
	}
	if linkExists(t, a.ns, vethName(web.UID)) {
		t.Fatal("web's veth still exists after teardown")
	}
	if tbl := nftTable(t, a.ns); strings.Contains(tbl, "dnat to") || !strings.Contains(tbl, "masquerade") {
		t.Fatalf("after teardown the table should keep masquerade and lose every dnat:\n%s", tbl)
	}
	if body, err := curlIn(a.ns, "http://127.0.0.1:8080/"); err == nil {
		t.Fatalf("curl 127.0.0.1:8080 after teardown = %q; want a failure", body)
	}
	if err := a.m.TearDownPod(context.Background(), web.UID); err != nil {
		t.Fatalf("second TearDownPod = %v; want nil", err)
	}
	// the freed address is not handed out again at once (next-fit)
	_, nextIP := setUp(t, a, testPod("next"))
	if nextIP == webIP {
		t.Fatalf("next pod got the just-freed %s", nextIP)
	}

	// a node leaving the cluster leaves node-a's overlay
	if err := a.m.SetNodes(nodes[:1]); err != nil {
		t.Fatal(err)
	}
	if c, err := dialIn(localNS, "tcp4", remoteIP+":9000", 500*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("node-b's pods are still reachable after node-b left")
	}
	out := run(t, "ip", "-n", nsName(a.ns), "route", "show", "dev", DefaultVXLAN)
	if strings.Contains(out, "10.244.2.0/24") {
		t.Fatalf("route to node-b's pods left behind: %s", out)
	}
}

// TestPodNetworkReconcileAfterCrashRealNetns kills the Manager mid-life
// (no teardown), starts a new one on the same state and checks that live
// pods keep their addresses, gone pods' addresses and stray veths are
// freed, and no address is handed out twice.
func TestPodNetworkReconcileAfterCrashRealNetns(t *testing.T) {
	requireTools(t)
	h := newHost(t, "node-a", "192.168.251.1", "10.244.1.0/24")
	h.m = newManager(t, h)
	if err := h.m.SetPodCIDR(h.cidr); err != nil {
		t.Fatal(err)
	}
	liveNS, liveIP := setUp(t, h, testPod("live"))
	_, goneIP := setUp(t, h, testPod("gone", api.ContainerPort{ContainerPort: 80, HostPort: 8081}))
	// a leftover veth of skiff's naming on this agent's bridge that no pod
	// owns, and one on another agent's bridge (not ours to remove)
	run(t, "ip", "-n", nsName(h.ns), "link", "add", vethName("ghost"), "type", "veth", "peer", "name", "ghostpeer")
	run(t, "ip", "-n", nsName(h.ns), "link", "set", vethName("ghost"), "master", DefaultBridge)
	run(t, "ip", "-n", nsName(h.ns), "link", "add", "other0", "type", "bridge")
	run(t, "ip", "-n", nsName(h.ns), "link", "add", vethName("foreign"), "type", "veth", "peer", "name", "foreignpeer")
	run(t, "ip", "-n", nsName(h.ns), "link", "set", vethName("foreign"), "master", "other0")
	h.m.Close() // crash: nothing torn down

	m2 := newManager(t, h)
	if err := m2.Ready(); err != nil {
		t.Fatalf("Ready after restart = %v; want the persisted podCIDR set up again", err)
	}
	h.m = m2
	if got := m2.PodIP("uid-live"); got != liveIP {
		t.Fatalf("PodIP(live) after restart = %q; want %s", got, liveIP)
	}
	if err := m2.Reconcile(context.Background(), []string{"uid-live"}); err != nil {
		t.Fatal(err)
	}
	if got := m2.PodIP("uid-gone"); got != "" {
		t.Fatalf("PodIP(gone) after reconcile = %q; want freed", got)
	}
	if linkExists(t, h.ns, vethName("ghost")) || linkExists(t, h.ns, vethName("uid-gone")) {
		t.Fatal("stray veths survived Reconcile")
	}
	if !linkExists(t, h.ns, vethName("foreign")) {
		t.Fatal("Reconcile removed a veth on another agent's bridge")
	}
	if strings.Contains(nftTable(t, h.ns), "8081") {
		t.Fatalf("gone pod's hostPort rule survived Reconcile:\n%s", nftTable(t, h.ns))
	}
	// set up again after the crash: same address, still reachable
	if ip, err := m2.SetUpPod(context.Background(), "uid-live", liveNS, testPod("live")); err != nil || ip != liveIP {
		t.Fatalf("SetUpPod(live) again = %q, %v; want %s", ip, err, liveIP)
	}
	seen := map[string]bool{liveIP: true}
	for _, name := range []string{"p1", "p2", "p3"} {
		_, ip := setUp(t, h, testPod(name))
		if seen[ip] {
			t.Fatalf("address %s handed out twice", ip)
		}
		seen[ip] = true
	}
	_ = goneIP
	ln := listenIn(t, liveNS, "tcp4", ":80")
	serveHTTP(t, ln, "alive")
	if body, err := httpGetIn(h.ns, "http://"+net.JoinHostPort(liveIP, "80")+"/"); err != nil || body != "alive" {
		t.Fatalf("node to live pod after restart = %q, %v", body, err)
	}
	if err := m2.Uninstall(); err != nil {
		t.Fatalf("Uninstall = %v", err)
	}
	if linkExists(t, h.ns, DefaultBridge) || nftTable(t, h.ns) != "" && !strings.Contains(nftTable(t, h.ns), "No such file") {
		t.Fatalf("Uninstall left the bridge or table: %q", nftTable(t, h.ns))
	}
}

// TestPodNetworkSetUpCutShortRealNetns is an agent killed inside SetUpPod:
// the address was persisted, then the veth was never made ("gone") or its
// host end never came up ("down"). A new Manager gives those pods no
// PodIP, so the kubelet sets them up again, with the address they had;
// a finished pod keeps its PodIP and its link is not touched.
func TestPodNetworkSetUpCutShortRealNetns(t *testing.T) {
	requireTools(t)
	h := newHost(t, "node-a", "192.168.251.1", "10.244.1.0/24")
	h.m = newManager(t, h)
	if err := h.m.SetPodCIDR(h.cidr); err != nil {
		t.Fatal(err)
	}
	_, doneIP := setUp(t, h, testPod("done"))
	goneNS, goneIP := setUp(t, h, testPod("gone"))
	downNS, downIP := setUp(t, h, testPod("down"))
	run(t, "ip", "-n", nsName(h.ns), "link", "del", vethName("uid-gone"))
	run(t, "ip", "-n", nsName(h.ns), "link", "set", vethName("uid-down"), "down")
	doneIndex := run(t, "ip", "-n", nsName(h.ns), "-o", "link", "show", vethName("uid-done"))
	h.m.Close() // the crash

	m2 := newManager(t, h)
	h.m = m2
	if got := m2.PodIP("uid-done"); got != doneIP {
		t.Fatalf("PodIP(done) after restart = %q; want %s", got, doneIP)
	}
	for _, uid := range []string{"uid-gone", "uid-down"} {
		if got := m2.PodIP(uid); got != "" {
			t.Fatalf("PodIP(%s) after a set-up cut short = %q; want empty, so that the kubelet sets it up again", uid, got)
		}
	}
	for _, p := range []struct{ name, ns, ip string }{{"gone", goneNS, goneIP}, {"down", downNS, downIP}} {
		ip, err := m2.SetUpPod(context.Background(), "uid-"+p.name, p.ns, testPod(p.name))
		if err != nil || ip != p.ip {
			t.Fatalf("SetUpPod(%s) again = %q, %v; want its address %s", p.name, ip, err, p.ip)
		}
		if out := run(t, "ip", "-n", nsName(h.ns), "-o", "link", "show", vethName("uid-"+p.name)); !strings.Contains(out, ",UP") {
			t.Fatalf("host veth of %s after the new set-up: %s", p.name, out)
		}
		if out := run(t, "ip", "-n", nsName(p.ns), "-o", "addr", "show", "dev", "eth0"); !strings.Contains(out, p.ip+"/") {
			t.Fatalf("eth0 of %s after the new set-up: %s; want %s", p.name, out, p.ip)
		}
	}
	if again := run(t, "ip", "-n", nsName(h.ns), "-o", "link", "show", vethName("uid-done")); again != doneIndex {
		t.Fatalf("the finished pod's veth changed over the restart:\n%s\n%s", doneIndex, again)
	}
}

// TestPodNetworkTearDownWithFullDiskRealNetns: with the state file
// unwritable (a full disk), TearDownPod still removes the pod's veth and
// address and succeeds, since tearing pods down is what frees the disk;
// Reconcile saves the state once it can.
func TestPodNetworkTearDownWithFullDiskRealNetns(t *testing.T) {
	requireTools(t)
	h := newHost(t, "node-a", "192.168.251.1", "10.244.1.0/24")
	h.m = newManager(t, h)
	if err := h.m.SetPodCIDR(h.cidr); err != nil {
		t.Fatal(err)
	}
	setUp(t, h, testPod("gone"))
	_, keepIP := setUp(t, h, testPod("keep"))
	// Writing ipam.json.tmp fails as it would on a full disk.
	blocker := statePath(h.stateDir) + ".tmp"
	if err := os.Mkdir(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := h.m.TearDownPod(context.Background(), "uid-gone"); err != nil {
		t.Fatalf("TearDownPod with the state unwritable = %v; want it done all the same", err)
	}
	if linkExists(t, h.ns, vethName("uid-gone")) || h.m.PodIP("uid-gone") != "" {
		t.Fatal("the torn-down pod kept its veth or address")
	}
	if err := h.m.Reconcile(context.Background(), []string{"uid-keep"}); err == nil {
		t.Fatal("Reconcile succeeded while the state could not be saved")
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Reconcile(context.Background(), []string{"uid-keep"}); err != nil {
		t.Fatal(err)
	}
	st, err := loadState(h.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Pods["uid-gone"]; ok || st.Pods["uid-keep"].IP != keepIP {
		t.Fatalf("state on disk after Reconcile = %+v; want keep (%s) only", st.Pods, keepIP)
	}
}
