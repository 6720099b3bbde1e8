package agent_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

// loopbackResolver is a DNS server the test runs on 127.0.0.1: the only
// upstream the agents' DNS may forward to. It answers outside.test with
// 192.0.2.7 and every other name NXDOMAIN.
func loopbackResolver(t *testing.T) string {
	t.Helper()
	srv := &mdns.Server{Addr: "127.0.0.1:0", Net: "udp", Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		if strings.EqualFold(r.Question[0].Name, "outside.test.") && r.Question[0].Qtype == mdns.TypeA {
			rr, _ := mdns.NewRR("outside.test. 60 IN A 192.0.2.7")
			m.Answer = append(m.Answer, rr)
		} else {
			m.Rcode = mdns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ListenAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return srv.PacketConn.LocalAddr().String()
}

func nft(ns string) string {
	out, _ := exec.Command("ip", "netns", "exec", filepath.Base(ns), "nft", "list", "table", "ip", network.DefaultTable).CombinedOutput()
	return string(out)
}

// TestServicesAndDNSAcrossHostsRealContainerd runs two full agents on real
// containerd in two test-made namespace "hosts" joined over VXLAN. A
// Service selects an httpd pod on host A; a pod on host B resolves
// web.default.svc.cluster.local with busybox nslookup (answered by host
// B's agent through the cluster DNS address), resolves a name outside the
// cluster (forwarded to the test's loopback resolver) and fetches the page
// from the cluster IP with nc. The node port answers on host A's address
// from host B. With the server stopped, host B's agent restarts and still
// routes and answers DNS from its checkpoint. When the pod turns unready
// its address leaves host B's rules; deleting the Service removes every
// rule of it.
func TestServicesAndDNSAcrossHostsRealContainerd(t *testing.T) {
	srv := agenttest.StartServer(t)
	upstream := loopbackResolver(t)
	hostA, hostB := testHost(t, "sa"), testHost(t, "sb")
	nameA, nameB := filepath.Base(hostA), filepath.Base(hostB)
	ip(t, "-n", nameA, "link", "add", "wire", "type", "veth", "peer", "name", "wire", "netns", nameB)
	ip(t, "-n", nameA, "addr", "add", "192.168.214.1/24", "dev", "wire")
	ip(t, "-n", nameB, "addr", "add", "192.168.214.2/24", "dev", "wire")
	ip(t, "-n", nameA, "link", "set", "wire", "up")
	ip(t, "-n", nameB, "link", "set", "wire", "up")
	onHost := func(name, hostNS, nodeIP string) func(*agent.Config) {
		return func(c *agent.Config) {
			c.NodeName, c.NodeIP = name, nodeIP
			c.DNSUpstreams = []string{upstream}
			c.Network = func(n *network.Config) { n.HostNetNS = hostNS }
		}
	}
	a := startTestAgentWith(t, srv, nil, onHost("svc-a", hostA, "192.168.214.1"))
	b := startTestAgentWith(t, srv, nil, onHost("svc-b", hostB, "192.168.214.2"))
	agenttest.Eventually(t, "both nodes registered", func() bool { return a.running.Registered() && b.running.Registered() })

	ctl := t.TempDir() // the test flips the pod's readiness through this directory
	web := busyboxPod("web", "mkdir -p /www && echo through-the-service > /www/index.html && exec httpd -f -p 8080 -h /www")
	web.Labels = map[string]string{"app": "web"}
	web.Spec.NodeName = "svc-a"
	web.Spec.Volumes = []api.Volume{{Name: "ctl", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: ctl}}}}
	web.Spec.Containers[0].VolumeMounts = []api.VolumeMount{{Name: "ctl", MountPath: "/ctl"}}
	web.Spec.Containers[0].Ports = []api.ContainerPort{{Name: "http", ContainerPort: 8080}}
	web.Spec.Containers[0].ReadinessProbe = &api.Probe{ProbeHandler: api.ProbeHandler{Exec: &api.ExecAction{Command: []string{"sh", "-c", "test ! -e /ctl/unready"}}},
		PeriodSeconds: 1, FailureThreshold: 1}
	srv.CreatePod(web)
	pod := waitPod(t, srv, "web", "Ready with an IP", func(p *api.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == api.PodReady && c.Status == api.ConditionTrue {
				return p.Status.PodIP != ""
			}
		}
		return false
	})

	svcRes, _ := api.LookupResource("services")
	obj, err := srv.Admin.Create(context.Background(), &api.Service{
		ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: api.ServiceSpec{Type: api.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
			Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: api.FromString("http"), NodePort: 30480}}},
	})
	if err != nil {
		t.Fatalf("create service: %v", err)
	}
	clusterIP := obj.(*api.Service).Spec.ClusterIP
	agenttest.Eventually(t, "host B programs the Service's endpoint", func() bool {
		tbl := nft(hostB)
		return strings.Contains(tbl, clusterIP) && strings.Contains(tbl, pod.Status.PodIP+" . 8080")
	})

	cli := busyboxPod("client", fmt.Sprintf(`set -x
cat /etc/resolv.conf
nslookup web.default.svc.cluster.local || exit 11
nslookup web.default.svc.cluster.local | grep -q %[1]s || exit 12
nslookup outside.test | grep -q 192.0.2.7 || exit 13
for i in $(seq 1 50); do
  if printf 'GET /index.html HTTP/1.0\r\n\r\n' | nc -w 2 %[1]s 80 | grep through-the-service; then exit 0; fi
  sleep 0.2
done
exit 14`, clusterIP))
	cli.Spec.NodeName = "svc-b"
	cli.Spec.RestartPolicy = api.RestartPolicyNever
	srv.CreatePod(cli)
	got := waitPod(t, srv, "client", "finished", func(p *api.Pod) bool {
		return p.Status.Phase == api.PodSucceeded || p.Status.Phase == api.PodFailed
	})
	if got.Status.Phase != api.PodSucceeded {
		if lp, err := b.running.Kubelet.LogPath("default", "client", "main", false); err == nil {
			out, _ := os.ReadFile(lp)
			t.Logf("client log:\n%s", out)
		}
		t.Fatalf("the client pod on host B failed (%+v)\nhost B table:\n%s", got.Status.ContainerStatuses, nft(hostB))
	}

	// The node port, from host B to host A's address.
	out, err := exec.Command("ip", "netns", "exec", nameB, "curl", "-sS", "-m", "3", "http://192.168.214.1:30480/index.html").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "through-the-service") {
		t.Fatalf("node port 30480 on host A from host B = %q, %v\nhost A table:\n%s", out, err, nft(hostA))
	}

	// With the server away, host B's agent restarts: it keeps the rules
	// and answers DNS from its checkpoint.
	srv.Stop()
	b.stop()
	b.start()
	lookup := func() (string, error) {
		out, err := exec.Command("ip", "netns", "exec", nameB, "busybox", "nslookup", "web.default.svc.cluster.local", "10.43.0.10").CombinedOutput()
		return string(out), err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := lookup()
		tbl := nft(hostB)
		if err == nil && strings.Contains(out, clusterIP) && strings.Contains(tbl, pod.Status.PodIP+" . 8080") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("offline, after a restart, host B: nslookup = %q, %v; table:\n%s", out, err, tbl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv.Start()

	// The pod turns unready: its address leaves host B's rules.
	if err := os.WriteFile(filepath.Join(ctl, "unready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for strings.Contains(nft(hostB), pod.Status.PodIP+" . 8080") {
		if time.Now().After(deadline) {
			t.Fatalf("the unready pod's endpoint is still in host B's rules:\n%s", nft(hostB))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Deleting the Service removes every rule of it on both hosts.
	if err := srv.Admin.Delete(context.Background(), svcRes, "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatalf("delete service: %v", err)
	}
	for _, h := range []string{hostA, hostB} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			tbl := nft(h)
			if !strings.Contains(tbl, clusterIP) && !strings.Contains(tbl, "30480") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("rules of the deleted Service remain on %s:\n%s", filepath.Base(h), tbl)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
