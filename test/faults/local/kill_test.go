package local

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestAgentKilledDuringBurst kills the agent process with SIGKILL while
// it starts a burst of 20 pods, once a given number of pods have a cgroup, restarts it, and requires exactly 20 running containers: none
// twice, none lost, none left over, and the containers that ran before
// the kill are the ones that run after it (the restart adopts them).
func TestAgentKilledDuringBurst(t *testing.T) {
	c := Start(t, Options{})
	// The short form kills once, in the middle of the burst; the long
	// form at its start (no container yet), early, mid-way and late.
	rounds := []trigger{{"cgroups", 8}, {"running", 10}}
	if full() {
		rounds = []trigger{{"cgroups", 0}, {"cgroups", 2}, {"cgroups", 8}, {"cgroups", 16}, {"running", 1}, {"running", 10}, {"running", 17}}
	}
	parent := c.T
	for i, at := range rounds {
		t.Run(fmt.Sprintf("kill at %d %s", at.n, at.what), func(t *testing.T) {
			c.T = t
			defer func() { c.T = parent }()
			killDuringBurst(t, c, fmt.Sprintf("burst%d", i), at)
		})
	}
}

// trigger is when the kill comes: once n pods have a cgroup (the first
// step of starting one), or ("running") once n pods run and two more of
// the burst have a cgroup.
type trigger struct {
	what string
	n    int
}

func killDuringBurst(t *testing.T, c *Cluster, prefix string, at trigger) {
	const n = 20
	ctx := context.Background()
	var names []string
	if at.what == "running" {
		// The first at.n pods run, then the rest are created and the
		// kill comes once two of them have a cgroup.
		names = createPods(t, c, prefix+"a", at.n)
		Eventually(t, 60*time.Second, fmt.Sprintf("%d containers running", at.n), func() bool {
			ids, err := runningIDs(ctx, c)
			return err == nil && len(ids) >= at.n
		})
		names = append(names, createPods(t, c, prefix+"b", n-at.n)...)
		at = trigger{"cgroups", at.n + 2}
	} else {
		names = createPods(t, c, prefix, n)
	}
	// The trigger is polled every 5 ms.
	deadline := time.Now().Add(60 * time.Second)
	for at.n > 0 {
		cg, err := podCgroups(c.CgroupRoot)
		if err != nil {
			t.Fatal(err)
		}
		if len(cg) >= at.n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pod cgroups after 60s; waited for %d", len(cg), at.n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.Agent().Kill()
	after, err := runningIDs(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	cg, _ := podCgroups(c.CgroupRoot)
	t.Logf("SIGKILL with %d pod cgroups and %d of %d containers running", len(cg), len(after), n)
	if len(after) == n {
		t.Logf("the burst had finished at the kill: this round tests the restart only")
	}
	c.StartAgent()
	c.WaitNodeReady(60 * time.Second)

	// Every acknowledged create is a pod that runs.
	waitRunning(t, c, names)
	st := c.CheckInvariants(60 * time.Second)
	if got := st.RunningCount(); got != n {
		t.Errorf("%d containers run after the restart; want exactly %d", got, n)
	}
	now, err := runningIDs(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var replaced []string
	for uid, id := range after {
		if now[uid] != id {
			replaced = append(replaced, fmt.Sprintf("%s: %s → %s", uid, id, now[uid]))
		}
	}
	sort.Strings(replaced)
	if len(replaced) > 0 {
		t.Errorf("containers that ran at the kill were replaced after the restart:\n%v", replaced)
	}
	noRestarts(t, c, names, "the agent's restart")
	deleteAndCheck(t, c, names)
}

// runningIDs maps each pod UID to its running container's ID.
func runningIDs(ctx context.Context, c *Cluster) (map[string]string, error) {
	s, err := c.Containers(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for uid, ids := range s.IDs {
		out[uid] = strings.Join(ids, ",")
	}
	return out, nil
}
