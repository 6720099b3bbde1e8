package agent_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	ctdclient "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

// nodeReadyDelay polls the Node (every 5 ms) from before it exists and
// returns how long after it first appeared its Ready condition was True.
func nodeReadyDelay(t *testing.T, srv *agenttest.Server, name string) time.Duration {
	t.Helper()
	nodes, _ := api.LookupResource("nodes")
	var seen time.Time
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		obj, err := srv.Admin.Get(context.Background(), nodes, "", name)
		if err == nil {
			now := time.Now()
			if seen.IsZero() {
				seen = now
			}
			for _, c := range obj.(*api.Node).Status.Conditions {
				if c.Type == api.NodeReady && c.Status == api.ConditionTrue {
					return now.Sub(seen)
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("node %s not Ready within 90 s (registered: %v)", name, !seen.IsZero())
	return 0
}

// podTasks lists the containerd tasks of pod uid straight from
// containerd (not through the agent): container ID → task status.
func podTasks(t *testing.T, socket, uid string) map[string]ctdclient.ProcessStatus {
	t.Helper()
	c, err := ctdclient.New(socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := namespaces.WithNamespace(context.Background(), agent.Namespace)
	cs, err := c.Containers(ctx, fmt.Sprintf("labels.%q==%s", runtime.LabelPodUID, uid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ctdclient.ProcessStatus{}
	for _, ctr := range cs {
		task, err := ctr.Task(ctx, nil)
		if err != nil {
			continue // no task
		}
		st, err := task.Status(ctx)
		if err != nil {
			continue
		}
		out[ctr.ID()] = st.Status
	}
	return out
}

// answers reports whether an HTTP server answers at addr (a pod IP on
// the test's own bridge).
func answers(addr string) bool {
	c := http.Client{Timeout: 300 * time.Millisecond}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return true
}

// TestAgentFirstStartReadyAndForceDeleteRealContainerd tries the first
// day of issue 15 on real containerd and a real server: a fresh node is
// Ready within a second of registering (not at the next 10 s heartbeat),
// and a force delete (gracePeriodSeconds=0) of a pod whose server
// ignores SIGTERM under a 30 s grace period stops it within a second:
// its containerd task is gone and it no longer answers.
func TestAgentFirstStartReadyAndForceDeleteRealContainerd(t *testing.T) {
	srv := agenttest.StartServer(t)
	ta := startTestAgent(t, srv, nil)
	d := nodeReadyDelay(t, srv, "edge")
	t.Logf("registration → Ready: %v", d)
	if d > time.Second {
		t.Errorf("node Ready %v after registration; want ≤ 1s", d)
	}

	pod := busyboxPod("web", "trap '' TERM; mkdir -p /www; echo up > /www/index.html; exec httpd -f -p 8080 -h /www")
	grace := int64(30)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	pod.Spec.Containers[0].Ports = []api.ContainerPort{{ContainerPort: 8080}}
	uid := srv.CreatePod(pod).UID
	running := waitPod(t, srv, "web", "Running with an IP", func(p *api.Pod) bool { return p.Status.Phase == api.PodRunning && p.Status.PodIP != "" })
	addr := net.JoinHostPort(running.Status.PodIP, "8080")
	agenttest.Eventually(t, "web answers", func() bool { return answers(addr) })
	if tasks := podTasks(t, ta.cfg.Containerd, uid); len(tasks) != 1 {
		t.Fatalf("tasks of web before the delete: %v; want one running", tasks)
	}

	zero := int64(0)
	start := time.Now()
	if err := srv.Admin.Delete(context.Background(), agenttest.Pods(), "default", "web", client.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Admin.Get(context.Background(), agenttest.Pods(), "default", "web"); !api.IsNotFound(err) {
		t.Fatalf("web after a force delete: %v; want NotFound at once", err)
	}
	var gone time.Duration
	for {
		if len(podTasks(t, ta.cfg.Containerd, uid)) == 0 {
			gone = time.Since(start)
			break
		}
		if time.Since(start) > 40*time.Second {
			t.Fatalf("web's task still there %v after a force delete", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("force delete → containerd task gone: %v", gone)
	if gone > time.Second {
		t.Errorf("force delete stopped the pod in %v; want ≤ 1s", gone)
	}
	if answers(addr) {
		t.Error("web still answers after its task is gone")
	}
}
