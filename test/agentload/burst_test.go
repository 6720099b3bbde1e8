package agentload

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/testenv"
)

// burstSize is how many containers (baseline) and pods (skiff) start at
// once.
const burstSize = 100

// burstMemory is each container's memory limit, as in the runs.
const burstMemory = 64 << 20

// baselineBurst starts burstSize busybox `sleep 3600` containers with a
// 64 MiB limit in parallel straight through the containerd client — what
// `ctr run -d` does: a snapshot, a spec, a task started, no networking
// beyond a fresh netns — and returns the time until every task runs.
func (c *cluster) baselineBurst(ctx context.Context, tb testing.TB) time.Duration {
	cl, err := client.New(c.socket)
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx = namespaces.WithNamespace(ctx, "baseline")
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
		wg    sync.WaitGroup
		mu    sync.Mutex
		tasks []client.Task
	)
	t0 := time.Now()
	for i := 0; i < burstSize; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("base-%d", i)
			ctr, err := cl.NewContainer(ctx, id, client.WithNewSnapshot(id, img),
				client.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "3600"),
					oci.WithMemoryLimit(burstMemory), oci.WithCgroup(c.cgroup+"/baseline/"+id)))
			if err != nil {
				tb.Error(err)
				return
			}
			task, err := ctr.NewTask(ctx, cio.NullIO)
			if err != nil {
				tb.Error(err)
				return
			}
			if err := task.Start(ctx); err != nil {
				tb.Error(err)
				return
			}
			mu.Lock()
			tasks = append(tasks, task)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	d := time.Since(t0)
	if len(tasks) != burstSize {
		tb.Fatalf("baseline: %d of %d containers started", len(tasks), burstSize)
	}
	// Stop them so the skiff burst starts on a quiet containerd.
	for _, t := range tasks {
		if _, err := t.Delete(ctx, client.WithProcessKill); err != nil {
			tb.Error(err)
		}
	}
	return d
}

func limitedPod(name string) *api.Pod {
	p := pod(name)
	p.Spec.Containers[0].Resources.Limits = api.ResourceList{api.ResourceMemory: resource.NewQuantity(burstMemory, resource.BinarySI)}
	return p
}

// BenchmarkPodStartBurst measures, in one run on one containerd, 100
// busybox containers (64 MiB limit) started in parallel through the
// containerd client — the baseline — and then 100 such pods created at
// once through a real `skiff server` and `skiff agent`, and reports both
// and their ratio (the goal: ≤ 1.5).
func BenchmarkPodStartBurst(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c := start(b)
		ctx, cancel := context.WithCancel(context.Background())
		base := c.baselineBurst(ctx, b)
		b.ReportMetric(base.Seconds(), "containerd-100-running-s")

		seen := c.watchRunning(ctx)
		t0 := time.Now()
		var wg sync.WaitGroup
		for j := 0; j < burstSize; j++ {
			wg.Add(1)
			go func(j int) {
				defer wg.Done()
				if _, err := c.admin.Create(ctx, limitedPod(fmt.Sprintf("burst-%d", j))); err != nil {
					b.Error(err)
				}
			}(j)
		}
		wg.Wait()
		waitFor(b, 180*time.Second, "100 pods Running", func() bool {
			for j := 0; j < burstSize; j++ {
				if _, ok := seen.at(fmt.Sprintf("burst-%d", j)); !ok {
					return false
				}
			}
			return true
		})
		skiff := time.Since(t0)
		b.ReportMetric(skiff.Seconds(), "skiff-100-running-s")
		b.ReportMetric(skiff.Seconds()/base.Seconds(), "ratio")
		shims, pss := shimPSS(b, c.socket)
		b.ReportMetric(float64(shims), "shims")
		b.ReportMetric(pss/burstSize/(1<<20), "shim-PSS-per-pod-MB")
		cancel()
	}
}

// shimPSS counts the runc shims serving the containerd at socket and sums
// their proportional set size (shared pages split among the sharers), in
// bytes, from /proc/<pid>/smaps_rollup.
func shimPSS(tb testing.TB, socket string) (n int, pss float64) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) == 0 || !strings.HasSuffix(args[0], "containerd-shim-runc-v2") || !slices.Contains(args, socket) {
			continue
		}
		n++
		roll, err := os.ReadFile(filepath.Join("/proc", e.Name(), "smaps_rollup"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(roll), "\n") {
			if v, ok := strings.CutPrefix(line, "Pss:"); ok {
				kb, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
				pss += kb * 1024
			}
		}
	}
	return n, pss
}
