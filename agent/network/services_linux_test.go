package network

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/proxy"
	"github.com/skiffhq/skiff/api"
)

// svcState builds a proxy State of one port.
func svcState(ports ...proxy.Port) *proxy.State { return &proxy.State{Ports: ports} }

func ep(ip string, port uint16, local bool) proxy.Endpoint {
	return proxy.Endpoint{IP: netip.MustParseAddr(ip), Port: port, Local: local}
}

// udpAsk sends msg on conn and returns the answer.
func udpAsk(t *testing.T, conn interface {
	Write([]byte) (int, error)
	Read([]byte) (int, error)
	SetDeadline(time.Time) error
}, msg string) (string, error) {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, 128)
	n, err := conn.Read(buf)
	return string(buf[:n]), err
}

func udpEcho(t *testing.T, nsPath, addr, tag string) {
	pc := listenUDPIn(t, nsPath, addr)
	go func() {
		buf := make([]byte, 64)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte(tag+":"), buf[:n]...), from)
		}
	}()
}

// TestServiceProxyTwoHostsRealNetns programs Services on two simulated
// nodes joined by VXLAN and checks, with real traffic inside the test's
// namespaces: a pod reaching a cluster IP whose endpoint is on the other
// node, the node itself reaching it, a pod reaching its own Service
// (hairpin), node ports on the node's address and on 127.0.0.1,
// externalTrafficPolicy Local keeping the client address, a UDP endpoint
// leaving (its conntrack entry is flushed, so the same client socket
// moves to the new endpoint), and a deleted Service leaving no rule.
func TestServiceProxyTwoHostsRealNetns(t *testing.T) {
	requireTools(t)
	a := newHost(t, "node-a", "192.168.249.1", "10.244.1.0/24")
	b := newHost(t, "node-b", "192.168.249.2", "10.244.2.0/24")
	joinHosts(t, a.ns, b.ns, a.ip, b.ip)
	nodes := []*api.Node{nodeObj(a.name, a.cidr, a.ip), nodeObj(b.name, b.cidr, b.ip)}
	for _, h := range []*testHost{a, b} {
		h.m = newManager(t, h)
		if err := h.m.SetNodes(nodes); err != nil {
			t.Fatalf("%s: SetNodes = %v", h.name, err)
		}
	}
	webNS, webIP := setUp(t, b, testPod("web"))
	serveHTTP(t, listenIn(t, webNS, "tcp4", ":8080"), "hello from web")
	clientNS, _ := setUp(t, a, testPod("client"))
	// An echo of the client address, for externalTrafficPolicy Local.
	whoLn := listenIn(t, webNS, "tcp4", ":9090")
	go func() {
		for {
			c, err := whoLn.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(c.RemoteAddr().String()))
			c.Close()
		}
	}()
	udpEcho(t, webNS, ":5353", "web")
	dnsNS, dnsIP := setUp(t, b, testPod("dns2"))
	udpEcho(t, dnsNS, ":5353", "dns2")

	cip := netip.MustParseAddr("10.96.0.10")
	web := proxy.Port{Name: "default/web:http", ClusterIP: cip, Port: 80, Proto: proxy.ProtoTCP, NodePort: 30080,
		Endpoints: []proxy.Endpoint{ep(webIP, 8080, false)}}
	who := proxy.Port{Name: "default/who:who", ClusterIP: netip.MustParseAddr("10.96.0.11"), Port: 90, Proto: proxy.ProtoTCP, NodePort: 30090, ExternalLocal: true,
		Endpoints: []proxy.Endpoint{ep(webIP, 9090, true)}}
	udp := proxy.Port{Name: "default/echo:udp", ClusterIP: netip.MustParseAddr("10.96.0.12"), Port: 53, Proto: proxy.ProtoUDP,
		Endpoints: []proxy.Endpoint{ep(webIP, 5353, false)}}
	onB := who
	onB.Endpoints = []proxy.Endpoint{ep(webIP, 9090, true)}
	onA := who
	onA.Endpoints = []proxy.Endpoint{ep(webIP, 9090, false)}
	if err := a.m.SyncServices(svcState(web, onA, udp)); err != nil {
		t.Fatalf("node-a SyncServices = %v", err)
	}
	if err := b.m.SyncServices(svcState(web, onB, udp)); err != nil {
		t.Fatalf("node-b SyncServices = %v", err)
	}
	// The Manager rewriting its own chains (a pod set-up) keeps the
	// proxy's rules.
	setUp(t, a, testPod("other"))

	checks := []struct{ what, from, url string }{
		{"pod on node-a to a cluster IP with the endpoint on node-b", clientNS, "http://10.96.0.10:80/"},
		{"node-a itself to the cluster IP", a.ns, "http://10.96.0.10:80/"},
		{"the endpoint pod to its own Service (hairpin)", webNS, "http://10.96.0.10:80/"},
		{"another pod on the endpoint's node", dnsNS, "http://10.96.0.10:80/"},
		{"node port on node-a's address, from node-b", b.ns, "http://" + a.ip + ":30080/"},
		{"node port on node-b's own address, from node-a", a.ns, "http://" + b.ip + ":30080/"},
	}
	for _, c := range checks {
		if body, err := httpGetIn(c.from, c.url); err != nil || body != "hello from web" {
			t.Fatalf("%s: GET %s = %q, %v; want hello from web\nnode-a:\n%s\nnode-b:\n%s", c.what, c.url, body, err, nftTable(t, a.ns), nftTable(t, b.ns))
		}
	}
	if body, err := curlIn(a.ns, "http://127.0.0.1:30080/"); err != nil || body != "hello from web" {
		t.Fatalf("node port on 127.0.0.1 of node-a = %q, %v", body, err)
	}
	// externalTrafficPolicy Local on node-b keeps node-a's address.
	c, err := dialIn(a.ns, "tcp4", b.ip+":30090", 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	c.Close()
	if got := string(buf[:n]); !strings.HasPrefix(got, a.ip+":") {
		t.Errorf("client address seen through a Local node port = %q; want node-a's %s", got, a.ip)
	}

	// UDP: the same client socket keeps its conntrack entry until the
	// endpoint leaves; then its next datagram reaches the new endpoint.
	conn, err := dialIn(clientNS, "udp4", "10.96.0.12:53", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if got, err := udpAsk(t, conn, "x"); err != nil || got != "web:x" {
		t.Fatalf("UDP through the cluster IP = %q, %v; want web:x", got, err)
	}
	udp.Endpoints = []proxy.Endpoint{ep(dnsIP, 5353, false)}
	flushed := make(chan error, 1)
	a.m.svc.flushed = func(err error) { flushed <- err }
	if err := a.m.SyncServices(svcState(web, onA, udp)); err != nil {
		t.Fatal(err)
	}
	if err := <-flushed; err != nil {
		t.Fatalf("conntrack flush = %v", err)
	}
	if got, err := udpAsk(t, conn, "y"); err != nil || got != "dns2:y" {
		t.Fatalf("UDP after the endpoint moved = %q, %v; want dns2:y (stale conntrack entry not flushed?)", got, err)
	}

	// A Service without endpoints drops; deleting every Service leaves
	// no proxy chain and no map element.
	web.Endpoints = nil
	if err := a.m.SyncServices(svcState(web)); err != nil {
		t.Fatal(err)
	}
	if _, err := httpGetIn(clientNS, "http://10.96.0.10:80/"); err == nil {
		t.Error("a Service without endpoints still answered")
	}
	if err := a.m.SyncServices(svcState()); err != nil {
		t.Fatal(err)
	}
	tbl := nftTable(t, a.ns)
	for _, stale := range []string{"chain svc-0", "chain svc-1", "chain ep-", "chain ext-", "10.96.0.", "goto"} {
		for _, line := range strings.Split(tbl, "\n") {
			if strings.Contains(line, stale) && !strings.Contains(line, "svc-mark") && !strings.Contains(line, "svc-drop") {
				t.Errorf("after every Service was deleted the table still has %q:\n%s", line, tbl)
			}
		}
	}
	if !strings.Contains(tbl, "hostports") {
		t.Errorf("the Manager's chains went with the Services:\n%s", tbl)
	}
}

// TestServiceProxyRecoversFromAFlushedTableRealNetns deletes the proxy's
// chains behind its back (as a firewall reload would); the failed
// incremental sync makes the next one rewrite everything.
func TestServiceProxyRecoversFromAFlushedTableRealNetns(t *testing.T) {
	requireTools(t)
	h := newHost(t, "node-a", "192.168.246.1", "10.244.1.0/24")
	h.m = newManager(t, h)
	if err := h.m.SetPodCIDR(h.cidr); err != nil {
		t.Fatal(err)
	}
	p := proxy.Port{Name: "default/web:http", ClusterIP: netip.MustParseAddr("10.96.0.10"), Port: 80, Proto: proxy.ProtoTCP,
		Endpoints: []proxy.Endpoint{ep("10.244.1.9", 8080, true)}}
	if err := h.m.SyncServices(svcState(p)); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "netns", "exec", nsName(h.ns), "nft", "delete", "table", "ip", DefaultTable)
	p.Endpoints = append(p.Endpoints, ep("10.244.1.10", 8080, true))
	if err := h.m.SyncServices(svcState(p)); err == nil {
		t.Log("incremental sync over a deleted table succeeded (the kernel recreated what it needed)")
	}
	if err := h.m.SetPodCIDR(h.cidr); err != nil { // the Manager repairs its own chains
		t.Fatal(err)
	}
	if err := h.m.SyncServices(svcState(p)); err != nil {
		t.Fatalf("sync after the table was deleted = %v; want a full rewrite", err)
	}
	// nft names the protocol from /etc/protocols, which the test VM
	// lacks: there it prints 6.
	if tbl := nftTable(t, h.ns); !strings.Contains(tbl, "10.244.1.10 . 8080") ||
		!(strings.Contains(tbl, "10.96.0.10 . tcp . 80") || strings.Contains(tbl, "10.96.0.10 . 6 . 80")) {
		t.Fatalf("after recovery the table lacks the Service:\n%s", tbl)
	}
}
