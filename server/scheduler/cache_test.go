package scheduler

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/clock"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
)

func TestCacheAccountsPodsPerNode(t *testing.T) {
	c := NewCache(30 * time.Second)
	c.SetNode(st.Node("n1", "4", "8Gi", st.Labels("zone", "a"), st.Images(100<<20, "nginx")))
	c.AddPod(NewPodInfo(st.Pod("a", "1", "1Gi", st.OnNode("n1"), st.HostPort(80))))
	c.AddPod(NewPodInfo(st.Pod("b", "500m", "", st.OnNode("n1"))))
	ni := c.Node("n1")
	if ni == nil {
		t.Fatal("Node(n1) = nil")
	}
	want := Resources{MilliCPU: 1500, Memory: 1 << 30}
	if ni.Requested != want {
		t.Errorf("Requested = %+v; want %+v", ni.Requested, want)
	}
	if ni.PodCount != 2 || len(ni.UsedPorts) != 1 || ni.Labels["zone"] != "a" {
		t.Errorf("PodCount=%d ports=%v labels=%v; want 2, one port, zone=a", ni.PodCount, ni.UsedPorts, ni.Labels)
	}
	if _, ok := ni.Images["docker.io/library/nginx:latest"]; !ok {
		t.Errorf("Images = %v; want the normalised nginx", ni.Images)
	}
	if got := ni.NonZero.Memory; got != 1<<30+defaultMemoryRequest {
		t.Errorf("NonZero.Memory = %d; want request plus the default for b", got)
	}
	c.RemovePod("default/a")
	if ni.Requested.MilliCPU != 500 || len(ni.UsedPorts) != 0 || ni.PodCount != 1 {
		t.Errorf("after RemovePod: %+v ports=%v count=%d", ni.Requested, ni.UsedPorts, ni.PodCount)
	}
}

func TestCacheAssumeConfirmForgetExpire(t *testing.T) {
	clk := clock.NewFake(st.Epoch)
	c := NewCache(30 * time.Second)
	c.SetNode(st.Node("n1", "4", "8Gi"))
	c.SetNode(st.Node("n2", "4", "8Gi"))
	a := NewPodInfo(st.Pod("a", "1", "1Gi"))
	b := NewPodInfo(st.Pod("b", "1", "1Gi"))
	d := NewPodInfo(st.Pod("d", "1", "1Gi"))
	for _, pi := range []*PodInfo{a, b, d} {
		if err := c.AssumePod(pi, "n1"); err != nil {
			t.Fatalf("AssumePod(%s) = %v", pi.Key, err)
		}
	}
	if err := c.AssumePod(a, "n2"); !errors.Is(err, ErrAlreadyCached) {
		t.Errorf("AssumePod twice = %v; want ErrAlreadyCached", err)
	}
	if got := c.Node("n1").Requested.MilliCPU; got != 3000 {
		t.Errorf("n1 cpu after assuming 3 = %d; want 3000", got)
	}
	// a: bind fails → forgotten.
	c.ForgetPod(a.Key)
	// b: bind commits, then the watch confirms it on n2 (moved).
	c.FinishBinding(b.Key, clk.Now())
	bound := st.Pod("b", "1", "1Gi", st.OnNode("n2"))
	c.AddPod(NewPodInfo(bound))
	// d: bind commits but is never confirmed.
	c.FinishBinding(d.Key, clk.Now())

	if c.IsAssumed(b.Key) || !c.IsAssumed(d.Key) {
		t.Errorf("IsAssumed(b)=%v IsAssumed(d)=%v; want false, true", c.IsAssumed(b.Key), c.IsAssumed(d.Key))
	}
	clk.Advance(29 * time.Second)
	if got := c.Expire(clk.Now()); len(got) != 0 {
		t.Errorf("Expire at 29s = %v; want none", got)
	}
	clk.Advance(time.Second)
	if got := c.Expire(clk.Now()); !slices.Equal(got, []string{"default/d"}) {
		t.Errorf("Expire at 30s = %v; want [default/d]", got)
	}
	if got := c.Node("n1").Requested.MilliCPU; got != 0 {
		t.Errorf("n1 cpu = %d; want 0 (a forgotten, b moved, d expired)", got)
	}
	if got := c.Node("n2").Requested.MilliCPU; got != 1000 {
		t.Errorf("n2 cpu = %d; want 1000", got)
	}
	// Bound pods never expire and ForgetPod leaves them alone.
	c.ForgetPod(b.Key)
	clk.Advance(time.Hour)
	c.Expire(clk.Now())
	if !slices.Equal(c.PodKeys(), []string{"default/b"}) {
		t.Errorf("PodKeys = %v; want [default/b]", c.PodKeys())
	}
}

func TestCacheNodeRemovedKeepsPodsAndSnapshotOrder(t *testing.T) {
	c := NewCache(time.Minute)
	for _, n := range []string{"c", "a", "b"} {
		c.SetNode(st.Node(n, "1", "1Gi"))
	}
	c.AddPod(NewPodInfo(st.Pod("p", "1", "", st.OnNode("b"))))
	if got := c.NodeNames(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("NodeNames = %v; want [a b c]", got)
	}
	c.RemoveNode("b")
	if got := c.NodeNames(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("NodeNames after removing b = %v; want [a c]", got)
	}
	c.SetNode(st.Node("b", "1", "1Gi"))
	if got := c.Node("b").Requested.MilliCPU; got != 1000 {
		t.Errorf("b cpu after re-adding = %d; want the remaining pod's 1000", got)
	}
	// A pod bound to a node never seen is kept on a placeholder.
	c.AddPod(NewPodInfo(st.Pod("q", "1", "", st.OnNode("zz"))))
	if c.Node("zz") != nil {
		t.Error("Node(zz) != nil; want placeholder hidden")
	}
}

func TestNewPodInfoRequests(t *testing.T) {
	p := st.Pod("p", "1", "1Gi")
	init := p.Spec.Containers[0]
	init.Name = "init"
	p.Spec.Containers = append(p.Spec.Containers, init) // 2 cpu, 2Gi
	big := st.Pod("x", "3", "512Mi").Spec.Containers[0]
	p.Spec.InitContainers = []api.Container{big}
	pi := NewPodInfo(p)
	want := Resources{MilliCPU: 3000, Memory: 2 << 30}
	if pi.Requests != want {
		t.Errorf("Requests = %+v; want %+v (max of sum and each init container)", pi.Requests, want)
	}
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }
