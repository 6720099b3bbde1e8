package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// containerOf is the main container of the pod named ns/name in pods.
func containerOf(pods []runtime.PodStatus, ns, name string) (runtime.ContainerStatus, bool) {
	var best runtime.ContainerStatus
	found := false
	for _, p := range pods {
		if p.Namespace != ns || p.Name != name {
			continue
		}
		for _, c := range p.Containers {
			if c.Name == "main" && (!found || c.CreatedAt.After(best.CreatedAt)) {
				best, found = c, true
			}
		}
	}
	return best, found
}

const staticManifest = `apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: default
spec:
  containers:
  - name: main
    image: skiff.test/busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`

// TestServerOutage stops the server (20 s in the short form, 10 minutes
// in the long one) while node-a runs a steady pod and a crashing one.
// Meanwhile the steady pod keeps its container, the crashing one is
// restarted by the agent alone, and a static pod dropped into the
// manifest directory starts. When the server is back on its address the
// statuses catch up (restart count, the static pod's mirror) and nothing
// restarts because of the return.
func TestServerOutage(t *testing.T) {
	c := newCluster(t, 1, defaultTiming())
	c.startAgents()
	a := c.hosts[0]
	c.static["default/static-web-"+a.name] = true
	stop := c.writer(250 * time.Millisecond)
	defer stop()

	c.create(bare("steady", a.name, sleeper()))
	crash := bare("crasher", a.name, []api.Container{{Name: "main", Image: testImage, ImagePullPolicy: api.PullIfNotPresent,
		Command: []string{"sh", "-c", "sleep 1; exit 3"}}})
	c.create(crash)
	c.eventually(2*time.Minute, "steady running and crasher restarted once", func() bool {
		s, err := c.admin.Get(context.Background(), res("pods"), "default", "steady")
		if err != nil || s.(*api.Pod).Status.Phase != api.PodRunning {
			return false
		}
		cr, err := c.admin.Get(context.Background(), res("pods"), "default", "crasher")
		if err != nil {
			return false
		}
		cs := cr.(*api.Pod).Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount >= 1
	})
	before := a.inspect()
	steady, ok := containerOf(before, "default", "steady")
	if !ok || steady.State != runtime.StateRunning {
		t.Fatalf("steady's container: %+v, found %v", steady, ok)
	}
	crashed, _ := containerOf(before, "default", "crasher")

	outage := 20 * time.Second
	if long() {
		outage = 10 * time.Minute
	}
	down := time.Now()
	c.stopServer()
	// A static pod appears while the server is away.
	if err := os.WriteFile(filepath.Join(a.cfg.DataDir, "agent", "pod-manifests", "static-web.yaml"), []byte(staticManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	c.eventually(time.Minute, "the static pod running without the server", func() bool {
		s, ok := containerOf(a.inspect(), "default", "static-web-"+a.name)
		return ok && s.State == runtime.StateRunning
	})
	c.eventually(outage, "the crashing container restarted by the agent alone", func() bool {
		cr, ok := containerOf(a.inspect(), "default", "crasher")
		return ok && cr.RestartCount > crashed.RestartCount
	})
	time.Sleep(time.Until(down.Add(outage)))
	during := a.inspect()
	if s, _ := containerOf(during, "default", "steady"); s.ID != steady.ID || s.State != runtime.StateRunning {
		t.Fatalf("steady's container changed during the outage: %+v, was %+v", s, steady)
	}
	crashedDuring, _ := containerOf(during, "default", "crasher")
	t.Logf("server down %v; crasher restarts %d → %d meanwhile", time.Since(down).Round(time.Second), crashed.RestartCount, crashedDuring.RestartCount)

	back := time.Now()
	c.startServer()
	c.waitNodeReady(a.name, true, time.Minute)
	c.eventually(time.Minute, "statuses caught up", func() bool {
		cr, err := c.admin.Get(context.Background(), res("pods"), "default", "crasher")
		if err != nil {
			return false
		}
		cs := cr.(*api.Pod).Status.ContainerStatuses
		if len(cs) != 1 || int(cs[0].RestartCount) < crashedDuring.RestartCount {
			return false
		}
		m, err := c.admin.Get(context.Background(), res("pods"), "default", "static-web-"+a.name)
		return err == nil && m.(*api.Pod).Status.Phase == api.PodRunning
	})
	t.Logf("statuses caught up %v after the server's return", time.Since(back).Round(100*time.Millisecond))
	// Nothing restarted because the server came back.
	after := a.inspect()
	if s, _ := containerOf(after, "default", "steady"); s.ID != steady.ID || s.State != runtime.StateRunning {
		t.Fatalf("steady's container changed after the return: %+v, was %+v", s, steady)
	}
	st, err := c.admin.Get(context.Background(), res("pods"), "default", "steady")
	if err != nil {
		t.Fatal(err)
	}
	if cs := st.(*api.Pod).Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 0 {
		t.Fatalf("steady's status after the return: %+v", cs)
	}
	stop()
	c.checkInvariants(30 * time.Second)
}
