package storage

import (
	"context"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// BenchmarkSQLiteStatusWrite is the server's side of an agent's status
// write for a pod the scheduler has just bound, 256 pods an iteration
// (128 agents at once): the bind (UpdateBatch), then for each pod the
// authorization's Get and GuaranteedUpdate's read and write. hot=8192 is
// the default, hot=off reads the database each time. cpu-µs/pod is the
// whole process's.
func BenchmarkSQLiteStatusWrite(b *testing.B) {
	for _, hot := range []int{DefaultHotObjects, -1} {
		name := fmt.Sprint("hot=", hot)
		if hot < 0 {
			name = "hot=off"
		}
		b.Run(name, func(b *testing.B) {
			s := benchStore(b, Options{HotObjects: hot})
			ctx := context.Background()
			objs := make([]api.Object, 256)
			for i := range objs {
				objs[i] = fixtures.Pod("default", fmt.Sprintf("web-%04d", i), map[string]string{"app": "web", "pod-template-hash": "5d8f7c9b4"})
			}
			for _, err := range s.CreateBatch(ctx, objs) {
				if err != nil {
					b.Fatal(err)
				}
			}
			cpu := testenv.ProcessCPU(b)
			b.ResetTimer()
			for n := range b.N {
				for i, o := range objs {
					o.(*api.Pod).Spec.NodeName = fmt.Sprintf("fleet-%05d", n*len(objs)+i)
				}
				for _, err := range s.UpdateBatch(ctx, objs) {
					if err != nil {
						b.Fatal(err)
					}
				}
				parallel(b, 128, len(objs), func(_, i int) error {
					name := objs[i-1].GetObjectMeta().Name
					if _, err := s.Get(ctx, "pods", "default", name); err != nil {
						return err
					}
					got, err := s.GuaranteedUpdate(ctx, "pods", "default", name, func(cur api.Object) (api.Object, error) {
						p := cur.(*api.Pod)
						p.Status.Phase = api.PodRunning
						p.Status.Message = fmt.Sprint("started ", n)
						return p, nil
					})
					objs[i-1] = got
					return err
				})
			}
			b.ReportMetric(float64((testenv.ProcessCPU(b)-cpu).Microseconds())/float64(b.N*len(objs)), "cpu-µs/pod")
			b.ReportMetric(float64(b.N*len(objs))/b.Elapsed().Seconds(), "pods/s")
			st := s.Stats()
			b.ReportMetric(float64(st.HotHits)/float64(max(1, st.HotHits+st.HotMisses)), "hot-share")
		})
	}
}
