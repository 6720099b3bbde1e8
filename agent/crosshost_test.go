package agent_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/api"
)

// testHost makes a network namespace standing for one machine; it is
// deleted (with every link, bridge, vxlan device and nftables table in
// it) when the test ends. It returns the namespace's path.
func testHost(t *testing.T, role string) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "skah-" + role + "-" + hex.EncodeToString(b)
	ip(t, "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	ip(t, "-n", name, "link", "set", "lo", "up")
	return filepath.Join("/run/netns", name)
}

func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestAgentsReachPodsAcrossHosts runs two full agents, each with its own
// containerd, as two "machines": each agent's links (bridge, veths, vxlan
// device, nftables) live in a network namespace the test made, and the
// two namespaces are joined by a veth pair on a /24 of their own. A pod
// on host B fetches a page from an httpd pod on host A by its pod IP,
// across the VXLAN overlay. No traffic leaves those namespaces.
func TestAgentsReachPodsAcrossHosts(t *testing.T) {
	srv := agenttest.StartServer(t)
	hostA, hostB := testHost(t, "a"), testHost(t, "b")
	nameA, nameB := filepath.Base(hostA), filepath.Base(hostB)
	ip(t, "-n", nameA, "link", "add", "wire", "type", "veth", "peer", "name", "wire", "netns", nameB)
	ip(t, "-n", nameA, "addr", "add", "192.168.213.1/24", "dev", "wire")
	ip(t, "-n", nameB, "addr", "add", "192.168.213.2/24", "dev", "wire")
	ip(t, "-n", nameA, "link", "set", "wire", "up")
	ip(t, "-n", nameB, "link", "set", "wire", "up")

	onHost := func(name, hostNS, nodeIP string) func(*agent.Config) {
		return func(c *agent.Config) {
			c.NodeName, c.NodeIP = name, nodeIP
			c.Network = func(n *network.Config) { n.HostNetNS = hostNS }
		}
	}
	a := startTestAgentWith(t, srv, nil, onHost("host-a", hostA, "192.168.213.1"))
	b := startTestAgentWith(t, srv, nil, onHost("host-b", hostB, "192.168.213.2"))
	agenttest.Eventually(t, "both nodes registered", func() bool { return a.running.Registered() && b.running.Registered() })

	web := busyboxPod("web", "mkdir -p /www && echo across > /www/index.html && exec httpd -f -p 8080 -h /www")
	web.Spec.NodeName = "host-a"
	srv.CreatePod(web)
	p := waitPod(t, srv, "web", "Running with an IP", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning && p.Status.PodIP != "" })

	// busybox-static's wget crashes in glibc's static resolver, so the
	// request is made by hand with nc.
	fetch := busyboxPod("fetch", fmt.Sprintf("for i in $(seq 1 50); do if printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 2 %s 8080 | grep across; then exit 0; fi; sleep 0.2; done; exit 1", p.Status.PodIP))
	fetch.Spec.NodeName = "host-b"
	fetch.Spec.RestartPolicy = api.RestartPolicyNever
	srv.CreatePod(fetch)
	got := waitPod(t, srv, "fetch", "finished", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
	})
	if got.Status.Phase != api.PodSucceeded {
		if lp, err := b.running.Kubelet.LogPath("default", "fetch", "main", false); err == nil {
			out, _ := os.ReadFile(lp)
			t.Logf("fetch log (pod IP %s):\n%s", got.Status.PodIP, out)
		}
		for _, n := range []string{nameA, nameB} {
			for _, args := range [][]string{{"-n", n, "addr"}, {"-n", n, "route"}, {"-n", n, "neigh"}, {"-n", n, "-d", "link", "show", "skiff.vxlan"}} {
				out, _ := exec.Command("ip", args...).CombinedOutput()
				t.Logf("ip %v:\n%s", args, out)
			}
			out, _ := exec.Command("bridge", "-n", n, "fdb", "show", "dev", "skiff.vxlan").CombinedOutput()
			t.Logf("fdb %s:\n%s", n, out)
			out, _ = exec.Command("ip", "netns", "exec", n, "sysctl", "net.ipv4.ip_forward").CombinedOutput()
			t.Logf("%s", out)
			out, _ = exec.Command("ip", "netns", "exec", n, "curl", "-sS", "-m", "2", "http://"+p.Status.PodIP+":8080/index.html").CombinedOutput()
			t.Logf("curl from %s: %s", n, out)
			out, _ = exec.Command("ip", "netns", "exec", n, "nft", "list", "ruleset").CombinedOutput()
			t.Logf("nft %s:\n%s", n, out)
		}
		t.Fatalf("the pod on host-b could not fetch from %s on host-a: %+v", p.Status.PodIP, got.Status.ContainerStatuses)
	}
	if sameSubnet(got.Status.PodIP, p.Status.PodIP) {
		t.Fatalf("pods on two nodes share a /24: %s and %s", got.Status.PodIP, p.Status.PodIP)
	}
}

// sameSubnet reports whether two IPv4 addresses share their first three
// octets.
func sameSubnet(x, y string) bool {
	return x[:strings.LastIndex(x, ".")] == y[:strings.LastIndex(y, ".")]
}
