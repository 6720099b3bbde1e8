package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/server/controllers"
)

// TestClockSkew runs node-a with its clock 5 minutes ahead of the
// server's and node-b 5 minutes behind (every time the agent reads,
// stamps or waits on comes from its skewed clock). Both join with the
// join token, get their certificates, heartbeat and run pods. The server
// warns about node-a (a ClockSkew event on the Node) and judges liveness
// by its own clock: cut off, node-a is marked unreachable after the
// grace, not 5 minutes late, and both come back Ready.
//
// What the in-process agents cannot skew is the TLS stack's own clock
// (crypto/tls reads the process's time): the certificates are backdated
// an hour by the server's CA, which is what lets a machine 5 minutes
// behind accept them.
func TestClockSkew(t *testing.T) {
	c := newCluster(t, 2, defaultTiming())
	a, b := c.hosts[0], c.hosts[1]
	a.startAgent(func(cfg *agent.Config) { cfg.Clock = offsetClock{offset: 5 * time.Minute} })
	b.startAgent(func(cfg *agent.Config) { cfg.Clock = offsetClock{offset: -5 * time.Minute} })
	c.waitNodeReady(a.name, true, time.Minute)
	c.waitNodeReady(b.name, true, time.Minute)
	stop := c.writer(250 * time.Millisecond)
	defer stop()

	c.create(bare("ahead", a.name, sleeper()))
	c.create(bare("behind", b.name, sleeper()))
	c.eventually(2*time.Minute, "pods running on both skewed nodes", func() bool {
		for _, name := range []string{"ahead", "behind"} {
			p, err := c.admin.Get(context.Background(), res("pods"), "default", name)
			if err != nil || p.(*api.Pod).Status.Phase != api.PodRunning {
				return false
			}
		}
		return true
	})
	// Heartbeats keep both Ready over several graces (a flap shorter
	// than the grace is a loaded machine, not broken heartbeats, which
	// would keep the node NotReady for good).
	w, stopWatch := c.watchReady(a.name)
	wb, stopWatchB := c.watchReady(b.name)
	time.Sleep(3 * c.timing.grace)
	stopWatch()
	stopWatchB()
	t.Logf("over %v: node-a %s; node-b %s", 3*c.timing.grace, w, wb)
	if w.longest >= c.timing.grace || wb.longest >= c.timing.grace {
		t.Fatalf("skewed nodes not Ready for a grace or more: node-a %s; node-b %s", w, wb)
	}
	c.eventually(30*time.Second, "a ClockSkew event on node-a", func() bool {
		return c.hasEvent(a.name, controllers.ReasonClockSkew)
	})
	if c.hasEvent(b.name, controllers.ReasonClockSkew) {
		t.Error("a ClockSkew event for node-b, whose clock is behind (harmless to liveness)")
	}

	// Node-a cut off: unreachable after the grace on the server's clock.
	cutAt := time.Now()
	a.cut()
	c.waitNodeReady(a.name, false, c.timing.grace+2*c.timing.heartbeat+10*time.Second)
	t.Logf("node-a (5 minutes ahead) not ready %v after the cut", time.Since(cutAt).Round(100*time.Millisecond))
	a.heal()
	c.waitNodeReady(a.name, true, 30*time.Second)
	stop()
	c.checkInvariants(30 * time.Second)
}

// hasEvent reports whether an event with reason is recorded about the
// Node name.
func (c *cluster) hasEvent(node, reason string) bool {
	objs, _, err := c.admin.List(context.Background(), res("events"), "", client.ListOptions{})
	if err != nil {
		return false
	}
	for _, o := range objs {
		e := o.(*api.Event)
		if e.Reason == reason && e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node {
			c.t.Logf("event %s: %s", e.Reason, strings.TrimSpace(e.Message))
			return true
		}
	}
	return false
}
