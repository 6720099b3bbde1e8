package faults

import (
	"context"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/controllers"
)

const testImage = "skiff.test/busybox:latest"

// sleeper is a container that runs until stopped.
func sleeper() []api.Container {
	return []api.Container{{Name: "main", Image: testImage, ImagePullPolicy: api.PullIfNotPresent,
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"}}}
}

func bare(name, node string, containers []api.Container) *api.Pod {
	return &api.Pod{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       api.PodSpec{NodeName: node, Containers: containers}}
}

func deployment(name string, replicas int32) *api.Deployment {
	labels := map[string]string{"app": name}
	grace := int64(2)
	return &api.Deployment{TypeMeta: api.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec: api.DeploymentSpec{Replicas: &replicas, Selector: &api.LabelSelector{MatchLabels: labels},
			Template: api.PodTemplateSpec{ObjectMeta: api.ObjectMeta{Labels: labels},
				Spec: api.PodSpec{Containers: sleeper(), TerminationGracePeriodSeconds: &grace}}}}
}

func (c *cluster) create(o api.Object) {
	c.t.Helper()
	if _, err := c.admin.Create(context.Background(), o); err != nil {
		c.t.Fatalf("create: %v", err)
	}
}

// appPods are the live (not terminal, not being deleted) pods of app.
func (c *cluster) appPods(app string) []*api.Pod {
	var out []*api.Pod
	for _, p := range c.pods() {
		if p.Labels["app"] == app && p.DeletionTimestamp == nil && p.Status.Phase != api.PodFailed && p.Status.Phase != api.PodSucceeded {
			out = append(out, p)
		}
	}
	return out
}

func running(ps []*api.Pod, node string) int {
	n := 0
	for _, p := range ps {
		if p.Status.Phase == api.PodRunning && (node == "" || p.Spec.NodeName == node) {
			n++
		}
	}
	return n
}

// TestPartitionedAgent cuts node-a off the server for longer than the
// node monitor grace plus the pod eviction timeout. The Deployment's
// pods on node-a are replaced on node-b and the bare pod ends
// Failed/NodeLost; node-a's containers keep running while it is cut off
// (nobody told it otherwise). After the heal its old copies stop within
// 10 s, the bare pod is never restarted and nothing runs twice.
func TestPartitionedAgent(t *testing.T) {
	c := newCluster(t, 2, defaultTiming())
	c.startAgents()
	a, b := c.hosts[0], c.hosts[1]
	stop := c.writer(250 * time.Millisecond)
	defer stop()

	const replicas = 4
	c.create(deployment("web", replicas))
	c.create(bare("lonely", a.name, sleeper()))
	c.eventually(2*time.Minute, "web and lonely running", func() bool {
		ps := c.appPods("web")
		if len(ps) != replicas || running(ps, "") != replicas {
			return false
		}
		p, err := c.admin.Get(context.Background(), res("pods"), "default", "lonely")
		return err == nil && p.(*api.Pod).Status.Phase == api.PodRunning
	})
	// The spread puts some replicas on each node; if it did not, the
	// test would prove nothing about replacement.
	onA := map[string]string{} // uid → name of what runs on node-a
	for _, p := range c.appPods("web") {
		if p.Spec.NodeName == a.name {
			onA[string(p.UID)] = p.Name
		}
	}
	if len(onA) == 0 {
		t.Fatal("no web replica landed on node-a")
	}
	lonely, err := c.admin.Get(context.Background(), res("pods"), "default", "lonely")
	if err != nil {
		t.Fatal(err)
	}
	lonelyUID := string(lonely.(*api.Pod).UID)
	c.checkInvariants(30 * time.Second)

	cutAt := time.Now()
	a.cut()
	tm := c.timing
	c.waitNodeReady(a.name, false, tm.grace+2*tm.heartbeat+10*time.Second)
	t.Logf("node-a not ready %v after the cut", time.Since(cutAt).Round(100*time.Millisecond))
	c.eventually(tm.grace+tm.eviction+2*time.Minute, "web replaced on node-b and lonely Failed/NodeLost", func() bool {
		ps := c.appPods("web")
		if len(ps) != replicas || running(ps, b.name) != replicas {
			return false
		}
		p, err := c.admin.Get(context.Background(), res("pods"), "default", "lonely")
		return err == nil && p.(*api.Pod).Status.Phase == api.PodFailed && p.(*api.Pod).Status.Reason == controllers.ReasonNodeLost
	})
	t.Logf("replaced %v after the cut", time.Since(cutAt).Round(100*time.Millisecond))
	// Cut off, node-a still runs its copies: it cannot know better.
	runA := runningUIDs(a.inspect())
	for uid, name := range onA {
		if _, ok := runA[uid]; !ok {
			t.Errorf("cut-off node-a stopped %s before hearing about it", name)
		}
	}
	if long() {
		time.Sleep(tm.grace + tm.eviction) // partitioned well beyond both timeouts
	}

	healAt := time.Now()
	a.heal()
	c.eventually(10*time.Second, "node-a's old copies stopped within 10 s of the heal", func() bool {
		runA := runningUIDs(a.inspect())
		for uid := range onA {
			if _, ok := runA[uid]; ok {
				return false
			}
		}
		_, ok := runA[lonelyUID]
		return !ok
	})
	t.Logf("old copies stopped %v after the heal", time.Since(healAt).Round(100*time.Millisecond))
	c.waitNodeReady(a.name, true, 30*time.Second)

	// The bare pod stays Failed and is never started again.
	for range 3 * int(tm.heartbeat/time.Second+1) {
		if _, ok := runningUIDs(a.inspect())[lonelyUID]; ok {
			t.Fatal("the NodeLost bare pod runs again on node-a")
		}
		p, err := c.admin.Get(context.Background(), res("pods"), "default", "lonely")
		if err != nil {
			t.Fatal(err)
		}
		if ph := p.(*api.Pod).Status.Phase; ph != api.PodFailed {
			t.Fatalf("the NodeLost bare pod went back to %s", ph)
		}
		time.Sleep(time.Second)
	}
	stop()
	if ps := c.appPods("web"); len(ps) != replicas {
		t.Errorf("%d web pods after the heal, want %d", len(ps), replicas)
	}
	c.checkInvariants(30 * time.Second)
}
