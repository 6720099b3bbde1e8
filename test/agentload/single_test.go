package agentload

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/skiffhq/skiff/internal/testenv"
)

// singleCount is how many pods (and baseline containers) the single-start
// benchmark starts, one after another.
var singleCount = flag.Int("agentload.single", 20, "pods started one after another by BenchmarkPodStartSingle")

// baselineSingle starts n busybox `sleep 3600` containers (64 MiB limit)
// one after another straight through the containerd client — snapshot,
// spec, task create and start, what `ctr run -d` does — and returns each
// one's time from the first call until its task was started. The
// containers are removed before it returns.
func (c *cluster) baselineSingle(ctx context.Context, tb testing.TB, n int) []time.Duration {
	cl, err := client.New(c.socket)
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx = namespaces.WithNamespace(ctx, "baseline-single")
	tar, _ := testenv.BusyboxImage(tb)
	f, err := os.Open(tar)
	if err != nil {
		tb.Fatal(err)
	}
	imgs, err := cl.Import(ctx, f)
	f.Close()
	if err != nil || len(imgs) == 0 {
		tb.Fatalf("import busybox: %v", err)
	}
	img := client.NewImage(cl, imgs[0])
	if err := img.Unpack(ctx, "overlayfs"); err != nil {
		tb.Fatal(err)
	}
	var (
		lat   []time.Duration
		tasks []client.Task
	)
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("single-%d", i)
		t0 := time.Now()
		ctr, err := cl.NewContainer(ctx, id, client.WithNewSnapshot(id, img),
			client.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "3600"),
				oci.WithMemoryLimit(burstMemory), oci.WithCgroup(c.cgroup+"/baseline-single/"+id)))
		if err != nil {
			tb.Fatal(err)
		}
		task, err := ctr.NewTask(ctx, cio.NullIO)
		if err != nil {
			tb.Fatal(err)
		}
		if err := task.Start(ctx); err != nil {
			tb.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		tasks = append(tasks, task)
	}
	for _, t := range tasks {
		if _, err := t.Delete(ctx, client.WithProcessKill); err != nil {
			tb.Error(err)
		}
	}
	return lat
}

// BenchmarkPodStartSingle measures, in one run on one containerd, the
// start of one busybox container at a time straight through the
// containerd client (the baseline), and then API create → Running of one
// pod at a time (64 MiB limit, IfNotPresent) through a real `skiff
// server` and `skiff agent`: the p50 and p99 of each. The issue's goal is
// a create → Running p50 ≤ 150 ms.
func BenchmarkPodStartSingle(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c := start(b)
		ctx, cancel := context.WithCancel(context.Background())
		base := c.baselineSingle(ctx, b, *singleCount)
		b.ReportMetric(float64(percentile(base, 0.5).Microseconds())/1000, "containerd-start-p50-ms")
		b.ReportMetric(float64(percentile(base, 0.99).Microseconds())/1000, "containerd-start-p99-ms")

		seen := c.watchRunning(ctx)
		// One pod first so the image is resolved and the pod network made,
		// as on an agent that has run pods before.
		c.runOne(ctx, b, seen, "warm")
		var lat []time.Duration
		for j := 0; j < *singleCount; j++ {
			lat = append(lat, c.runOne(ctx, b, seen, fmt.Sprintf("single-%d", j)))
		}
		p50 := percentile(lat, 0.5)
		b.ReportMetric(float64(p50.Microseconds())/1000, "create-to-running-p50-ms")
		b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "create-to-running-p99-ms")
		b.ReportMetric(float64(p50)/float64(percentile(base, 0.5)), "p50-ratio")
		cancel()
	}
}

// runOne creates one limited pod and returns the time from the create
// call until the watch saw it Running.
func (c *cluster) runOne(ctx context.Context, tb testing.TB, seen *runningTimes, name string) time.Duration {
	t0 := time.Now()
	if _, err := c.admin.Create(ctx, limitedPod(name)); err != nil {
		tb.Fatal(err)
	}
	waitFor(tb, 60*time.Second, name+" Running", func() bool { _, ok := seen.at(name); return ok })
	t1, _ := seen.at(name)
	return t1.Sub(t0)
}
