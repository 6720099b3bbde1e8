package prober_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/network"
	"github.com/skiffhq/skiff/agent/prober"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/runtime/containerd"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/vishvananda/netns"
)

// dialIn returns a dialer whose sockets are made inside the namespace at
// path (the test's "host"), so probe traffic stays in namespaces the test
// made.
func dialIn(path string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, nw, addr string) (net.Conn, error) {
		type res struct {
			c   net.Conn
			err error
		}
		ch := make(chan res, 1)
		go func() {
			goruntime.LockOSThread() // never unlocked: the thread dies with the goroutine
			ns, err := netns.GetFromPath(path)
			if err != nil {
				ch <- res{nil, err}
				return
			}
			defer ns.Close()
			if err := netns.Set(ns); err != nil {
				ch <- res{nil, err}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, nw, addr)
			ch <- res{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

// TestIntegrationProbesBusyboxHttpdRealContainerd runs busybox httpd in
// a pod on a real containerd, networked by agent/network inside a host
// namespace the test made, and probes it with httpGet, tcpSocket and
// exec on a fake clock.
func TestIntegrationProbesBusyboxHttpdRealContainerd(t *testing.T) {
	testenv.RequireBinaries(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("ip not found (make deps installs iproute2): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	b := make([]byte, 3)
	_, _ = rand.Read(b)
	hostNS := "sktest-probe-" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", hostNS).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", hostNS).Run() })
	hostPath := filepath.Join("/run/netns", hostNS)

	data := t.TempDir()
	cgRoot := fmt.Sprintf("/skiff-probe-it-%d", os.Getpid())
	t.Cleanup(func() { cleanupCgroups(t, cgRoot) })
	rt, err := containerd.New(ctx, containerd.Config{Socket: testenv.StartContainerd(t), DataDir: data, CgroupRoot: cgRoot, Snapshotter: testenv.Snapshotter()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tarPath, ref := testenv.BusyboxImage(t)
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rt.ImportImages(ctx, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}

	nw, err := network.New(network.Config{NodeName: "n1", StateDir: t.TempDir(), ClusterCIDR: "10.244.0.0/16", HostNetNS: hostPath, NoOverlay: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nw.Close()
	if err := nw.SetPodCIDR("10.244.7.0/24"); err != nil {
		t.Fatal(err)
	}
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "default", UID: fmt.Sprintf("probe-%d", os.Getpid())},
		Spec: api.PodSpec{Containers: []api.Container{{Name: "httpd", Image: ref,
			Ports: []api.ContainerPort{{Name: "http", ContainerPort: 8080}},
			ReadinessProbe: &api.Probe{ProbeHandler: api.ProbeHandler{HTTPGet: &api.HTTPGetAction{Path: "/healthz", Port: api.FromString("http")}},
				PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 2},
			LivenessProbe: &api.Probe{ProbeHandler: api.ProbeHandler{Exec: &api.ExecAction{Command: []string{"test", "-f", "/www/healthz"}}},
				PeriodSeconds: 1, FailureThreshold: 2, TimeoutSeconds: 5},
			StartupProbe: &api.Probe{ProbeHandler: api.ProbeHandler{TCPSocket: &api.TCPSocketAction{Port: api.FromInt(8080)}},
				PeriodSeconds: 1, FailureThreshold: 30, TimeoutSeconds: 2},
		}}}}
	sb, err := rt.CreateSandbox(ctx, runtime.SandboxConfig{PodUID: pod.UID, PodName: pod.Name, Namespace: "default", QOSClass: api.PodQOSBestEffort})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = nw.TearDownPod(context.Background(), pod.UID)
		_ = rt.RemoveSandbox(context.Background(), pod.UID)
	})
	ip, err := nw.SetUpPod(ctx, pod.UID, sb.NetNSPath, pod)
	if err != nil {
		t.Fatal(err)
	}
	id, err := rt.CreateContainer(ctx, runtime.ContainerConfig{PodUID: pod.UID, PodName: pod.Name, Namespace: "default", Name: "httpd", Hash: "h",
		Image: ref, Command: []string{"sh", "-c", "mkdir -p /www && echo ok > /www/healthz && exec httpd -f -p 8080 -h /www"},
		LogPath: filepath.Join(t.TempDir(), "httpd.log"), Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = rt.StopContainer(context.Background(), id, time.Second)
		_ = rt.RemoveContainer(context.Background(), id)
	})

	clk := clock.NewFake(time.Now())
	updates := make(chan prober.Update, 16)
	m, err := prober.New(prober.Config{Runtime: rt, Clock: clk, PodIP: nw.PodIP, Dial: dialIn(hostPath),
		OnUpdate: func(u prober.Update) { updates <- u }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	m.UpdatePod(pod, []prober.Container{{Name: "httpd", ID: id, StartedAt: clk.Now()}})

	// wait advances the fake clock a second at a time (httpd needs real
	// time to start) until an update of typ with result arrives
	wait := func(typ prober.ProbeType, want prober.Result) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case u := <-updates:
				if u.Type == typ && u.Result == want {
					return
				}
				t.Logf("update %s %s: %s", u.Type, u.Result, u.Message)
			case <-time.After(200 * time.Millisecond): // real I/O in the container
				clk.Advance(time.Second)
			}
		}
		t.Fatalf("no %s %s within 30s (pod IP %s)", typ, want, ip)
	}
	wait(prober.Startup, prober.Success)
	wait(prober.Readiness, prober.Success)
	if !m.Ready(pod.UID, "httpd", id) || m.LivenessFailed(pod.UID, "httpd", id) {
		t.Fatal("want ready and alive")
	}
	if code, out, err := rt.Exec(ctx, id, []string{"rm", "/www/healthz"}, 5*time.Second); err != nil || code != 0 {
		t.Fatalf("rm healthz = %d %s %v", code, out, err)
	}
	wait(prober.Readiness, prober.Failure) // httpd answers 404
	wait(prober.Liveness, prober.Failure)  // test -f fails twice
	if m.Ready(pod.UID, "httpd", id) || !m.LivenessFailed(pod.UID, "httpd", id) {
		t.Fatal("want not ready and liveness failed")
	}
}

func cleanupCgroups(t *testing.T, root string) {
	testenv.RemoveCgroupRoot(t, root)
}
