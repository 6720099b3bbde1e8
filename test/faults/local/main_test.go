package local

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBinary()
	os.Exit(code)
}

// full reports whether the long form runs (SKIFF_FAULTS_FULL=1).
func full() bool { return os.Getenv("SKIFF_FAULTS_FULL") == "1" }

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
