package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// BenchmarkSQLitePlacement writes what a placement writes for each of a
// ReplicaSet's pods, 256 pods an iteration: the controller's CreateBatch,
// the scheduler's UpdateBatch of binds, then each agent's status write
// (128 at once, so the writer groups them), at 4 KiB pages (SQLite's
// default, and skiff's) and at 16 KiB. cpu-µs/pod is the whole
// process's, the writer's share with the rest.
func BenchmarkSQLitePlacement(b *testing.B) {
	for _, ps := range []int{4096, 16384} {
		b.Run(fmt.Sprintf("page=%d", ps), func(b *testing.B) {
			defer func(was int) { pageSize = was }(pageSize)
			pageSize = ps
			s := benchStore(b, Options{})
			ctx := context.Background()
			n := 0
			objs := make([]api.Object, 256)
			cpu := testenv.ProcessCPU(b)
			b.ResetTimer()
			for range b.N {
				for i := range objs {
					n++
					objs[i] = fixtures.Pod("default", fmt.Sprintf("web-%08d", n), map[string]string{"app": "web", "pod-template-hash": "5d8f7c9b4"})
				}
				for _, err := range s.CreateBatch(ctx, objs) {
					if err != nil {
						b.Fatal(err)
					}
				}
				for i, o := range objs {
					o.(*api.Pod).Spec.NodeName = fmt.Sprintf("fleet-%05d", n-i)
				}
				for _, err := range s.UpdateBatch(ctx, objs) {
					if err != nil {
						b.Fatal(err)
					}
				}
				parallel(b, 128, len(objs), func(_, i int) error {
					p := objs[i-1].(*api.Pod)
					p.Status.Phase = api.PodRunning
					p.Status.Message = "started"
					return s.Update(ctx, p)
				})
			}
			b.ReportMetric(float64((testenv.ProcessCPU(b)-cpu).Microseconds())/float64(b.N*len(objs)), "cpu-µs/pod")
			b.ReportMetric(float64(b.N*len(objs))/b.Elapsed().Seconds(), "pods/s")
		})
	}
}

// BenchmarkSQLiteRandomStatus updates pods scattered over 10,000, 128
// writers at once: a fleet's status writes, which land on pages all over
// the table.
func BenchmarkSQLiteRandomStatus(b *testing.B) {
	for _, ps := range []int{4096, 8192, 16384} {
		b.Run(fmt.Sprintf("page=%d", ps), func(b *testing.B) {
			defer func(was int) { pageSize = was }(pageSize)
			pageSize = ps
			s := benchStore(b, Options{})
			ctx := context.Background()
			const pods = 10000
			objs := make([]api.Object, pods)
			for i := range objs {
				objs[i] = fixtures.Pod("default", fmt.Sprintf("web-%08d", i), map[string]string{"app": "web", "pod-template-hash": "5d8f7c9b4"})
			}
			for lo := 0; lo < pods; lo += 1024 {
				for _, err := range s.CreateBatch(ctx, objs[lo:lo+min(1024, pods-lo)]) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			// 128 writers, each with pods of its own (i%128), in an order
			// that scatters them over the table.
			cpu := testenv.ProcessCPU(b)
			b.ResetTimer()
			parallel(b, 128, b.N, func(w, i int) error {
				k := (i*7919 + w) % pods
				k -= k % 128
				k += w
				if k >= pods {
					k = w
				}
				p := objs[k].(*api.Pod)
				p.Status.Phase = api.PodRunning
				p.Status.Message = fmt.Sprint("update ", i)
				return s.Update(ctx, p)
			})
			b.ReportMetric(float64((testenv.ProcessCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/update")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
		})
	}
}
