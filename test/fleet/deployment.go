package fleet

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

// deploymentJSON is a Deployment of replicas pods spread evenly over the
// zones (maxSkew 1, DoNotSchedule).
func deploymentJSON(replicas int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"fleet-web","namespace":"default"},"spec":{"replicas":%d,`+
		`"selector":{"matchLabels":{"app":"fleet-web"}},"template":{"metadata":{"labels":{"app":"fleet-web"}},"spec":{`+
		`"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":%q,"whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"fleet-web"}}}],`+
		`"containers":[{"name":"web","image":"nginx:1.27","resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}}}`, replicas, LabelZone)
}

// podTracker follows the Deployment's pods through an admin watch.
type podTracker struct {
	mu      sync.Mutex
	seen    map[string]bool      // ns/name → created (the watch saw it)
	boundAt map[string]time.Time // ns/name → when the watch saw it bound
	nodeOf  map[string]string
	running map[string]bool
}

func (t *podTracker) counts() (bound, running int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.boundAt), len(t.running)
}

func (t *podTracker) created() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seen)
}

// follow records w's events until the stream ends, and returns why.
func (t *podTracker) follow(w *podWatch) error {
	for {
		typ, ns, name, node, phase, err := w.next()
		if err != nil {
			return err
		}
		if typ == api.Deleted {
			continue
		}
		now, key := time.Now(), ns+"/"+name
		t.mu.Lock()
		t.seen[key] = true
		if _, seen := t.boundAt[key]; !seen && node != "" {
			t.boundAt[key], t.nodeOf[key] = now, node
		}
		if api.PodPhase(phase) == api.PodRunning {
			t.running[key] = true
		}
		t.mu.Unlock()
	}
}

// deployment creates the spread Deployment and times its placement.
func (r *run) deployment(ctx context.Context) error {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := openPodWatch(wctx, r.admin, "")
	if err != nil {
		return fmt.Errorf("watch the deployment's pods: %w", err)
	}
	t := &podTracker{seen: map[string]bool{}, boundAt: map[string]time.Time{}, nodeOf: map[string]string{}, running: map[string]bool{}}
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		// A stream the server ends (this process, starved by the
		// fleet it runs, fell too far behind: 410) is resumed, from
		// the start when its version expired, with the back-off.
		bo := backoff.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
		for {
			err := t.follow(w)
			rv := w.resourceVersion()
			w.close()
			if client.IsGone(err) {
				rv = ""
			}
			for {
				if !clock.Sleep(wctx, clock.Real{}, bo.Next()) {
					return
				}
				if w, err = openPodWatch(wctx, r.admin, rv); err == nil {
					break
				}
				if client.IsGone(err) {
					rv = ""
				}
			}
		}
	}()
	// next and close may not run at once: the follower closes each
	// watch itself; the context ends the stream and the follower.
	defer func() {
		stop()
		<-followed
	}()
	a, err := r.sample()
	if err != nil {
		return err
	}
	before, err := r.serverHists(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	resp, err := r.admin.Do(ctx, http.MethodPost, "/apis/apps/v1/namespaces/default/deployments", bytes.NewReader(deploymentJSON(r.cfg.Replicas)))
	if err != nil {
		return fmt.Errorf("create the deployment: %w", err)
	}
	resp.Body.Close()
	n := r.cfg.Replicas
	deadline := start.Add(r.cfg.Timeout)
	// The pipeline's progress every 2 s (created → bound → at the
	// agents → Running), to show which stage a slow placement waits on.
	// Arrivals are counted for these lines only: counted every 20 ms, a
	// lock a pod, they took 6.6 % of this simulator's CPU during a
	// placement, on the cores the server needed.
	nextLine := start.Add(2 * time.Second)
	for bound, running := t.counts(); running < n; bound, running = t.counts() {
		if now := time.Now(); !now.Before(nextLine) {
			nextLine = nextLine.Add(2 * time.Second)
			r.progress("deployment at %v: %d created, %d bound, %d at the agents, %d Running",
				now.Sub(start).Round(100*time.Millisecond), t.created(), bound, r.deliveredCount(t), running)
		}
		if bound >= n && r.rep.DeployBound == 0 {
			r.rep.DeployBound = time.Since(start)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("deployment: %d of %d bound, %d running after %v\n%s", bound, n, running, r.cfg.Timeout, r.srv.LogTail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	r.rep.DeployRunning = time.Since(start)
	// The agents' arrival times are recorded as they happen: read once,
	// at the end, they give when the last replica arrived.
	if c, last := r.metrics.DeliveredWithPrefix("default/fleet-web-"); c >= n {
		r.rep.DeployAtAgents = last.Sub(start)
	}
	if r.rep.DeployBound == 0 {
		r.rep.DeployBound = r.rep.DeployRunning
	}
	b, err := r.sample()
	if err != nil {
		return err
	}
	r.rep.Replicas, r.rep.DeployCPU = n, CPUPercent(a.ProcStats, b.ProcStats)
	if after, err := r.serverHists(ctx); err == nil {
		r.rep.DeploySchedP99 = after.sched.Since(before.sched).Quantile(0.99)
		r.rep.DeployStore = after.store.since(before.store)
	}
	t.mu.Lock()
	var lat []time.Duration
	r.rep.ZoneCounts = map[string]int{}
	for key, at := range t.boundAt {
		if got, ok := r.metrics.DeliveredAt(key); ok {
			lat = append(lat, max(0, got.Sub(at)))
		}
		var i int
		if _, err := fmt.Sscanf(t.nodeOf[key], "fleet-%d", &i); err == nil {
			r.rep.ZoneCounts[fmt.Sprintf("zone-%d", i%r.cfg.Zones)]++
		}
	}
	t.mu.Unlock()
	sortDurations(lat)
	r.rep.DeployP50, r.rep.DeployP99 = Percentile(lat, 0.5), Percentile(lat, 0.99)
	r.progress("deployment of %d spread by zone: every replica at its agent in %v (agents' arrival times); by the admin watch: bound in %v, Running in %v; bind→agent p50 %v p99 %v; zones %v; server CPU %.1f%%, goroutines' wait for a core p99 ≤ %v, the store's %v, %v",
		n, r.rep.DeployAtAgents, r.rep.DeployBound, r.rep.DeployRunning, r.rep.DeployP50, r.rep.DeployP99, r.rep.ZoneCounts, r.rep.DeployCPU, r.rep.DeploySchedP99, r.rep.DeployStore, b)
	return nil
}

// StoreCounts are the server's store counters: transactions committed,
// objects written, and point reads answered from the objects written
// last (hot) or from the database (cold); and the scheduler's events and
// status writes dropped with their queue full.
type StoreCounts struct {
	Commits, Writes, HotReads, ColdReads, EffectsDropped float64
}

func (c StoreCounts) since(b StoreCounts) StoreCounts {
	return StoreCounts{c.Commits - b.Commits, c.Writes - b.Writes, c.HotReads - b.HotReads, c.ColdReads - b.ColdReads, c.EffectsDropped - b.EffectsDropped}
}

func (c StoreCounts) String() string {
	return fmt.Sprintf("transactions %.0f for %.0f writes; point reads %.0f from the hot objects, %.0f from the database; scheduler's events and status writes dropped %.0f", c.Commits, c.Writes, c.HotReads, c.ColdReads, c.EffectsDropped)
}

// parseStoreCounts reads the store counters from the server's /metrics
// text.
func parseStoreCounts(text []byte) StoreCounts {
	var c StoreCounts
	c.Commits, _ = ParseCounter(text, "skiff_store_commits_total")
	c.Writes, _ = ParseCounter(text, "skiff_store_writes_total")
	c.HotReads, _ = ParseCounter(text, "skiff_store_hot_reads_total")
	c.ColdReads, _ = ParseCounter(text, "skiff_store_cold_reads_total")
	c.EffectsDropped, _ = ParseCounter(text, "skiff_scheduler_effects_dropped_total")
	return c
}

func (r *run) deliveredCount(t *podTracker) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return r.metrics.CountDelivered(maps.Keys(t.boundAt))
}
