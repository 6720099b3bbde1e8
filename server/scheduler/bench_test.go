package scheduler

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// benchPods is how many pods each benchmark run schedules.
const benchPods = 10000

// benchCPUProfile, when set, writes a CPU profile of each run's timed part
// only (not the setup nor the check) to <value>-<sub-benchmark>.pprof.
var benchCPUProfile = flag.String("sched.cpuprofile", "", "write a CPU profile of the timed part of each scheduler benchmark run to `prefix`-<name>.pprof")

// startProfile starts the timed-part profile when asked and returns its stop.
func startProfile(b *testing.B) func() {
	if *benchCPUProfile == "" {
		return func() {}
	}
	name := strings.NewReplacer("/", "_", "=", "").Replace(b.Name())
	return testenv.CPUProfile(b, *benchCPUProfile+"-"+name+".pprof")
}

func BenchmarkSchedule(b *testing.B) {
	for _, pct := range []int{0, 1} {
		for _, nodes := range []int{100, 1000, 5000} {
			b.Run(fmt.Sprintf("nodes=%d/pods=%d/pct=%d", nodes, benchPods, pct), func(b *testing.B) {
				for range b.N {
					benchRun(b, nodes, benchPods, pct)
				}
			})
		}
	}
}

// benchNodes returns n nodes of mixed sizes, labels and taints.
func benchNodes(n int) []*api.Node {
	sizes := [][2]string{{"8", "16Gi"}, {"16", "32Gi"}, {"32", "64Gi"}, {"64", "128Gi"}}
	out := make([]*api.Node, n)
	for i := range n {
		sz := sizes[i%len(sizes)]
		tier := "core"
		if i%2 == 0 {
			tier = "edge"
		}
		opts := []st.NodeOpt{st.Labels("zone", fmt.Sprintf("z%d", i%10), "tier", tier, "gen", fmt.Sprint(1+i%5),
			"kubernetes.io/hostname", fmt.Sprintf("node-%05d", i))}
		switch {
		case i%10 == 3:
			opts = append(opts, st.Taint("dedicated", "gpu", "NoSchedule"))
		case i%20 == 7:
			opts = append(opts, st.Taint("spot", "", "PreferNoSchedule"))
		}
		if i%3 == 0 {
			opts = append(opts, st.Images(300<<20, "registry.local/app:1"))
		}
		out[i] = st.Node(fmt.Sprintf("node-%05d", i), sz[0], sz[1], opts...)
	}
	return out
}

// benchPod returns pod i: small requests, and a mix of selectors,
// affinities, tolerations, owners and host ports.
func benchPod(i int) *api.Pod {
	cpu := fmt.Sprintf("%dm", 50+(i%4)*50)
	mem := fmt.Sprintf("%dMi", 64+(i%4)*64)
	opts := []st.PodOpt{st.Owner(fmt.Sprintf("rs-%d", i/50)), st.Created(st.Epoch.Add(time.Duration(i) * time.Millisecond))}
	switch i % 10 {
	case 1:
		opts = append(opts, st.NodeSelector("tier", "edge"))
	case 2:
		opts = append(opts, st.Required("zone", "In", "z1", "z2", "z3", "z4"))
	case 3:
		opts = append(opts, st.Tolerate("dedicated", "Equal", "gpu", "NoSchedule"))
	case 4:
		opts = append(opts, st.Preferred(50, "gen", "Gt", "3"), st.Required("gen", "NotIn", "1"))
	case 5:
		opts = append(opts, st.Tolerate("", "Exists", "", ""))
	}
	if i%50 == 7 {
		opts = append(opts, st.HostPort(int32(8000+(i/50)%40)))
	}
	p := st.Pod(fmt.Sprintf("pod-%05d", i), cpu, mem, opts...)
	p.UID = fmt.Sprintf("uid-%05d", i)
	return p
}

type countingRecorder struct{ n atomic.Int64 }

func (r *countingRecorder) Eventf(context.Context, api.Object, string, string, string, ...any) {
	r.n.Add(1)
}

// createAll creates objs with 16 concurrent writers (group commit).
func createAll(b *testing.B, s *storage.Store, objs []api.Object) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(objs) {
					return
				}
				if err := s.Create(context.Background(), objs[i]); err != nil {
					b.Errorf("Create = %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func benchRun(b *testing.B, numNodes, numPods, pct int) {
	b.StopTimer()
	store := storagetest.Open(b, storage.Options{})
	nodes := benchNodes(numNodes)
	objs := make([]api.Object, 0, numNodes+numPods)
	for _, n := range nodes {
		objs = append(objs, n)
	}
	for i := range numPods {
		objs = append(objs, benchPod(i))
	}
	createAll(b, store, objs)
	rec := &countingRecorder{}
	s, err := New(Config{Store: store, Recorder: rec, PercentageOfNodesToScore: pct})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)

	b.StartTimer()
	stopProfile := startProfile(b)
	cpu0 := testenv.ProcessCPU(b)
	start := time.Now()
	go func() { done <- s.Run(ctx) }()
	m := s.Metrics()
	deadline := start.Add(5 * time.Minute)
	var firstBind time.Duration // until the first bind committed: list, decode, sync
	for m.Scheduled.Load()+m.Unschedulable.Load() < int64(numPods) || m.Scheduled.Load() < int64(numPods) {
		if firstBind == 0 && m.Scheduled.Load() > 0 {
			firstBind = time.Since(start)
		}
		if time.Now().After(deadline) {
			b.Fatalf("after 5m: %d scheduled, %d unschedulable attempts", m.Scheduled.Load(), m.Unschedulable.Load())
		}
		time.Sleep(time.Millisecond) // polling real I/O with a deadline
	}
	elapsed := time.Since(start)
	cpu := testenv.ProcessCPU(b) - cpu0
	stopProfile()
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}

	b.ReportMetric(float64(numPods)/elapsed.Seconds(), "pods/s")
	b.ReportMetric(float64(m.Attempt.Quantile(0.5).Microseconds())/1000, "attempt-p50-ms")
	b.ReportMetric(float64(m.Attempt.Quantile(0.99).Microseconds())/1000, "attempt-p99-ms")
	b.ReportMetric(float64(m.E2E.Quantile(0.5).Microseconds())/1000, "e2e-p50-ms")
	b.ReportMetric(float64(m.E2E.Quantile(0.99).Microseconds())/1000, "e2e-p99-ms")
	b.ReportMetric(float64(numPods)/float64(max(m.BindBatches.Load(), 1)), "binds/batch")
	b.ReportMetric(float64(firstBind.Microseconds())/1000, "first-bind-ms")
	b.ReportMetric(float64(m.SelfBoundEvents.Load())/float64(numPods), "self-bound/pod")
	b.ReportMetric(float64(m.Relists.Load()), "relists")
	// CPU time of the whole process (scheduler, store, GC) per pod: what
	// the run costs whatever else shares the machine.
	b.ReportMetric(float64(cpu.Microseconds())/float64(numPods), "cpu-µs/pod")
	checkPlacements(b, store, nodes, numPods)
}

// checkPlacements reads every pod back from the store and checks that
// each is bound, no node is over capacity or has a port clash, and every
// pod's selector, affinity and tolerations hold on its node.
func checkPlacements(b *testing.B, store *storage.Store, nodes []*api.Node, numPods int) {
	objs, _, err := store.List(context.Background(), "pods", storage.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pods := make([]*api.Pod, len(objs))
	for i, o := range objs {
		pods[i] = o.(*api.Pod)
		if pods[i].Spec.NodeName == "" {
			b.Fatalf("pod %s not bound", pods[i].Name)
		}
	}
	if len(pods) != numPods {
		b.Fatalf("%d pods stored; want %d", len(pods), numPods)
	}
	snap := NewSnapshot(nodes, pods)
	for _, ni := range snap.Nodes {
		r, a := ni.Requested, ni.Allocatable
		if r.MilliCPU > a.MilliCPU || r.Memory > a.Memory || ni.PodCount > ni.AllowedPods {
			b.Fatalf("node %s over capacity: requested %+v pods %d; allocatable %+v pods %d", ni.Name, r, ni.PodCount, a, ni.AllowedPods)
		}
		for i, p := range ni.UsedPorts {
			for _, q := range ni.UsedPorts[i+1:] {
				if p.conflicts(q) {
					b.Fatalf("node %s: host port %d used twice", ni.Name, p.Port)
				}
			}
		}
		for _, pi := range ni.Pods {
			for _, f := range []func(*PodInfo, *NodeInfo, []Reason) []Reason{filterAffinity, filterTaints} {
				if rs := f(pi, ni, nil); len(rs) > 0 {
					b.Fatalf("pod %s on %s: %v", pi.Key, ni.Name, rs)
				}
			}
		}
	}
}
