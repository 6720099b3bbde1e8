package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

// readyWatch samples a node's Ready condition every 250 ms and keeps
// the longest stretch it was not True.
type readyWatch struct {
	mu          sync.Mutex
	samples     int
	notReady    int
	longest     time.Duration
	streakStart time.Time
}

func (c *cluster) watchReady(name string) (*readyWatch, func()) {
	w := &readyWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			o, err := c.admin.Get(ctx, res("nodes"), "", name)
			if err != nil {
				continue
			}
			s, _ := nodeReady(o.(*api.Node))
			now := time.Now()
			w.mu.Lock()
			w.samples++
			if s != api.ConditionTrue {
				w.notReady++
				if w.streakStart.IsZero() {
					w.streakStart = now
				}
				w.longest = max(w.longest, now.Sub(w.streakStart))
			} else {
				w.streakStart = time.Time{}
			}
			w.mu.Unlock()
		}
	}()
	return w, func() { cancel(); <-done }
}

func (w *readyWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("not Ready in %d of %d samples, longest %v", w.notReady, w.samples, w.longest.Round(time.Millisecond))
}

// TestLossyLink gives node-a's link 20 % loss each way and 300 ms of
// latency each way. Node-a stays Ready (or flaps for less than the
// grace, so that nothing is evicted), and its pods converge: a
// Deployment's replicas and bare pods start, a deleted replica is
// replaced, and a deleted bare pod stops.
func TestLossyLink(t *testing.T) {
	tm := timing{heartbeat: 2 * time.Second, grace: 15 * time.Second, eviction: 10 * time.Second}
	hold := 25 * time.Second
	if long() {
		tm, hold = defaultTiming(), 3*time.Minute
	}
	c := newCluster(t, 2, tm)
	c.startAgents()
	a := c.hosts[0]
	stop := c.writer(500 * time.Millisecond)
	defer stop()

	a.lossy(20)
	a.delay.set(300 * time.Millisecond)
	w, stopWatch := c.watchReady(a.name)
	defer stopWatch()
	start := time.Now()
	const replicas = 4
	c.create(deployment("lossy", replicas))
	for i := range 3 {
		c.create(bare(fmt.Sprintf("on-a-%d", i), a.name, sleeper()))
	}
	bareRunning := func(i int) bool {
		p, err := c.admin.Get(context.Background(), res("pods"), "default", fmt.Sprintf("on-a-%d", i))
		return err == nil && p.(*api.Pod).Status.Phase == api.PodRunning
	}
	c.eventually(3*time.Minute, "pods on the lossy node running", func() bool {
		ps := c.appPods("lossy")
		return len(ps) == replicas && running(ps, "") == replicas && bareRunning(0) && bareRunning(1) && bareRunning(2)
	})
	t.Logf("converged %v after the link went bad", time.Since(start).Round(100*time.Millisecond))

	// A replica on node-a deleted is replaced; a bare pod deleted stops.
	var victim *api.Pod
	for _, p := range c.appPods("lossy") {
		if p.Spec.NodeName == a.name {
			victim = p
		}
	}
	if victim != nil {
		if err := c.admin.Delete(context.Background(), res("pods"), "default", victim.Name, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.admin.Delete(context.Background(), res("pods"), "default", "on-a-2", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.eventually(2*time.Minute, "the deleted replica replaced and the bare pod gone", func() bool {
		ps := c.appPods("lossy")
		if len(ps) != replicas || running(ps, "") != replicas {
			return false
		}
		for _, p := range ps {
			if victim != nil && p.UID == victim.UID {
				return false
			}
		}
		for _, name := range runningUIDs(a.inspect()) {
			if name == "default/on-a-2" {
				return false
			}
		}
		return true
	})
	time.Sleep(time.Until(start.Add(hold)))
	stopWatch()
	dropped := a.dropped()
	t.Logf("node-a over the lossy link: %s; %d packets dropped", w, dropped)
	if dropped == 0 {
		t.Error("the lossy link dropped nothing")
	}
	if w.longest >= tm.grace+tm.eviction {
		t.Errorf("node-a was not Ready for %v, beyond grace plus eviction timeout", w.longest)
	}
	for i := range 2 {
		p, err := c.admin.Get(context.Background(), res("pods"), "default", fmt.Sprintf("on-a-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if ph := p.(*api.Pod).Status.Phase; ph != api.PodRunning {
			t.Errorf("bare pod on-a-%d is %s (%s) over a lossy link", i, ph, p.(*api.Pod).Status.Reason)
		}
	}
	a.heal()
	c.waitNodeReady(a.name, true, time.Minute)
	stop()
	c.checkInvariants(time.Minute)
}
