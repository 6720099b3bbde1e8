package local

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBinary()
	os.Exit(code)
}

// full reports whether the long form runs (SKIFF_FAULTS_LONG=1).
func full() bool { return os.Getenv("SKIFF_FAULTS_LONG") == "1" }

// sleeper is a bare busybox pod bound to the node that sleeps.
func sleeper(name string) *api.Pod {
	p := &api.Pod{}
	p.APIVersion, p.Kind = "v1", "Pod"
	p.Name, p.Namespace = name, "default"
	grace := int64(0)
	p.Spec.NodeName = NodeName
	p.Spec.TerminationGracePeriodSeconds = &grace
	p.Spec.Containers = []api.Container{{Name: "main", Image: testenv.BusyboxRef, ImagePullPolicy: "Never",
		Command: []string{"sleep", "3600"}}}
	return p
}

// createPods creates n sleepers named prefix-i and returns the names the
// server acknowledged.
func createPods(t *testing.T, c *Cluster, prefix string, n int) []string {
	t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := c.Admin.Create(context.Background(), sleeper(name)); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		names = append(names, name)
	}
	return names
}

// waitRunning waits until every pod in names is Running.
func waitRunning(t *testing.T, c *Cluster, names []string) {
	t.Helper()
	pods, _ := api.LookupResource("pods")
	Eventually(t, 120*time.Second, fmt.Sprintf("the %d pods Running", len(names)), func() bool {
		for _, name := range names {
			obj, err := c.Admin.Get(context.Background(), pods, "default", name)
			if err != nil || obj.(*api.Pod).Status.Phase != api.PodRunning {
				return false
			}
		}
		return true
	})
}

// deleteAndCheck deletes the pods and requires that nothing of them is
// left: no pod, container, cgroup or veth.
func deleteAndCheck(t *testing.T, c *Cluster, names []string) {
	t.Helper()
	ctx := context.Background()
	pods, _ := api.LookupResource("pods")
	for _, name := range names {
		if err := c.Admin.Delete(ctx, pods, "default", name, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	Eventually(t, 120*time.Second, "the pods gone", func() bool {
		objs, _, err := c.Admin.List(ctx, pods, "default", client.ListOptions{})
		return err == nil && len(objs) == 0
	})
	if st := c.CheckInvariants(60 * time.Second); st.RunningCount() != 0 {
		t.Errorf("%d containers left after deleting every pod", st.RunningCount())
	}
}

// noRestarts requires restartCount 0 in every container of the pods.
func noRestarts(t *testing.T, c *Cluster, names []string, after string) {
	t.Helper()
	pods, _ := api.LookupResource("pods")
	for _, name := range names {
		obj, err := c.Admin.Get(context.Background(), pods, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		for _, cs := range obj.(*api.Pod).Status.ContainerStatuses {
			if cs.RestartCount != 0 {
				t.Errorf("pod %s container %s restartCount %d after %s; want 0", name, cs.Name, cs.RestartCount, after)
			}
		}
	}
}
