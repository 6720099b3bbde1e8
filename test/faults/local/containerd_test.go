package local

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestContainerdRestart restarts containerd under a running agent: the
// agent keeps running and reconnects (new pods start), and the pods it
// ran are neither duplicated nor lost nor restarted: the same containers
// run, with restartCount 0. The short form stops containerd with SIGTERM;
// the long form also kills it (SIGKILL) and restarts it in the middle of
// a burst of creates.
func TestContainerdRestart(t *testing.T) {
	c := Start(t, Options{})
	type round struct {
		name  string
		grace time.Duration
		burst bool // restart while a burst of pods is being started
	}
	rounds := []round{{"SIGTERM", 10 * time.Second, false}}
	if full() {
		rounds = append(rounds, round{"SIGKILL", 0, false}, round{"SIGTERM mid-burst", 10 * time.Second, true})
	}
	parent := c.T
	for i, r := range rounds {
		t.Run(r.name, func(t *testing.T) {
			c.T = t
			defer func() { c.T = parent }()
			restartContainerd(t, c, fmt.Sprintf("ctd%d", i), r.grace, r.burst)
		})
	}
}

func restartContainerd(t *testing.T, c *Cluster, prefix string, grace time.Duration, burst bool) {
	ctx := context.Background()
	names := createPods(t, c, prefix+"a", 5)
	waitRunning(t, c, names)
	before, err := runningIDs(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if burst {
		names = append(names, createPods(t, c, prefix+"b", 10)...)
		time.Sleep(200 * time.Millisecond) // some of the burst under way
	}
	c.Containerd.Restart(t, grace)
	if !c.Agent().Running() {
		t.Fatalf("the agent exited when containerd restarted:\n%s", tail(c.Agent().Log(), 40))
	}
	// The agent reconnects: pods created now start.
	names = append(names, createPods(t, c, prefix+"c", 2)...)
	waitRunning(t, c, names)
	if !c.Agent().Running() {
		t.Fatalf("the agent exited after containerd restarted:\n%s", tail(c.Agent().Log(), 40))
	}
	st := c.CheckInvariants(60 * time.Second)
	if got := st.RunningCount(); got != len(names) {
		t.Errorf("%d containers run; want exactly %d", got, len(names))
	}
	after, err := runningIDs(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	for uid, id := range before {
		if after[uid] != id {
			t.Errorf("pod %s: container %s was replaced by %q over the containerd restart", uid, id, after[uid])
		}
	}
	noRestarts(t, c, names, "the containerd restart")
	deleteAndCheck(t, c, names)
}
