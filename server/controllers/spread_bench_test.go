package controllers

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// benchCPUProfile, when set, writes a CPU profile of each spread
// benchmark run's timed part to <value>-<nodes>.pprof.
var benchCPUProfile = flag.String("ctl.cpuprofile", "", "write a CPU profile of the timed part of each spread placement benchmark run to `prefix`-<nodes>.pprof")

// zoneLabel is the well-known zone label (test/fleet's nodes carry it).
const zoneLabel = "topology.kubernetes.io/zone"

// BenchmarkSpreadDeployment measures issue 22's placement goal without
// the network: on a real store with the real scheduler and controllers,
// N nodes in 4 zones, each with its agent's assignment stream open (a
// storage watch of spec.nodeName=<node>, drained), whose simulated agents
// run every pod bound to them at once, the time from creating a Deployment of 10 000 replicas spread by
// zone (maxSkew 1, DoNotSchedule) until all are bound and until all are
// Running, and the process's CPU time meanwhile. Every zone must then hold
// exactly a quarter of the replicas.
func BenchmarkSpreadDeployment(b *testing.B) {
	for _, nodes := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d/replicas=10000", nodes), func(b *testing.B) {
			for range b.N {
				benchSpread(b, nodes, 10000)
			}
		})
	}
}

func benchSpread(b *testing.B, nodes, replicas int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := storagetest.Open(b, storage.Options{})
	log := slog.New(slog.DiscardHandler)
	createNodes(b, store, nodes)
	watchNodes(ctx, b, store, nodes)
	wg, m := startControlPlane(ctx, b, store, log)
	defer wg.Wait()
	defer cancel()
	agents := newSimAgents(store, log)
	var bound, running atomic.Int64
	agents.pods.AddHandler(func(old, cur api.Object) {
		if cur == nil {
			return
		}
		p := cur.(*api.Pod)
		var o *api.Pod
		if old != nil {
			o = old.(*api.Pod)
		}
		if p.Spec.NodeName != "" && (o == nil || o.Spec.NodeName == "") {
			bound.Add(1)
		}
		if p.Status.Phase == api.PodRunning && (o == nil || o.Status.Phase != api.PodRunning) {
			running.Add(1)
		}
	})
	wg.Go(func() { agents.run(ctx) })
	<-agents.pods.HasSynced()

	dep := deployment("web", int32(replicas), "nginx:1")
	dep.Spec.Template.Spec.TopologySpreadConstraints = []api.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: zoneLabel, WhenUnsatisfiable: api.DoNotSchedule,
		LabelSelector: &api.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	}}
	dep.UID, dep.CreationTimestamp, dep.Generation = "uid-web", api.NewTime(time.Now()), 1
	api.SetTypeMeta(dep)
	api.SetDefaults(dep)

	stop := startSpreadProfile(b, nodes)
	cpu0 := testenv.ProcessCPU(b)
	start := time.Now()
	if err := store.Create(ctx, dep); err != nil {
		b.Fatal(err)
	}
	waitFor := func(what string, n *atomic.Int64) time.Duration {
		deadline := time.Now().Add(5 * time.Minute)
		for n.Load() < int64(replicas) {
			if time.Now().After(deadline) {
				b.Fatalf("timed out waiting for %s: %d of %d", what, n.Load(), replicas)
			}
			time.Sleep(2 * time.Millisecond)
		}
		return time.Since(start)
	}
	tBound := waitFor("all bound", &bound)
	tRunning := waitFor("all running", &running)
	cpu := testenv.ProcessCPU(b) - cpu0
	stop()
	b.ReportMetric(tBound.Seconds(), "s-all-bound")
	b.ReportMetric(tRunning.Seconds(), "s-all-running")
	b.ReportMetric(cpu.Seconds(), "cpu-s")
	for _, q := range m.QueueMetrics() {
		if q.Name == "deployment" {
			b.ReportMetric(float64(q.Work.Count), "deployment-syncs")
		}
	}

	// Check the spread: every zone holds exactly replicas/4.
	zoneOf := func(node string) string {
		var i int
		fmt.Sscanf(node, "node-%d", &i)
		return fmt.Sprintf("zone-%d", i%4)
	}
	per := map[string]int{}
	for _, o := range agents.pods.List() {
		if p := o.(*api.Pod); p.Spec.NodeName != "" && active(p) {
			per[zoneOf(p.Spec.NodeName)]++
		}
	}
	for z := range 4 {
		if n := per[fmt.Sprintf("zone-%d", z)]; n != replicas/4 {
			b.Fatalf("zone-%d holds %d replicas; want %d (%v)", z, n, replicas/4, per)
		}
	}
}

// createNodes creates n ready nodes, round robin over zone-0 … zone-3,
// with 32 concurrent writers (group commit).
func createNodes(b *testing.B, store *storage.Store, n int) {
	ctx := context.Background()
	now := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := range 32 {
		wg.Go(func() {
			for i := w; i < n; i += 32 {
				name := fmt.Sprintf("node-%05d", i)
				nd := readyNode(name, map[string]string{zoneLabel: fmt.Sprintf("zone-%d", i%4), "kubernetes.io/hostname": name})
				nd.Status.Allocatable = api.ResourceList{api.ResourceCPU: resource.MustParse("4"), api.ResourceMemory: resource.MustParse("8Gi"), api.ResourcePods: resource.MustParse("110")}
				nd.Status.Conditions[0].LastHeartbeatTime = api.NewTime(now)
				nd.UID, nd.CreationTimestamp = "uid-"+name, api.NewTime(now)
				api.SetTypeMeta(nd)
				if err := store.Create(ctx, nd); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// watchNodes opens the assignment stream of each of n nodes, as the API
// server does for every connected agent: a pod watch selecting
// spec.nodeName, drained until ctx ends.
func watchNodes(ctx context.Context, b *testing.B, store *storage.Store, n int) {
	for i := range n {
		fs, err := fields.Parse(fmt.Sprintf("spec.nodeName=node-%05d", i))
		if err != nil {
			b.Fatal(err)
		}
		w, err := store.Watch(ctx, "pods", storage.WatchOptions{FromNow: true, Fields: fs})
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			for range w.Events() {
			}
		}()
	}
}

// startSpreadProfile starts the timed-part profile when asked and returns
// its stop.
func startSpreadProfile(b *testing.B, nodes int) func() {
	if *benchCPUProfile == "" {
		return func() {}
	}
	return testenv.CPUProfile(b, fmt.Sprintf("%s-%d.pprof", *benchCPUProfile, nodes))
}
