package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/testenv"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// BenchmarkSQLiteColdReads reads Nodes of a fleet's size (1.7 KiB) from
// the database, not the hot objects, while the file keeps changing: a
// busy server's reads after a restart. Of every 16 operations one is a
// write, so each reader finds its page cache stale; one in 2,048 lists
// the 10,000 pods, as the informers' and the watches' lists do. It
// compares the readers' page cache sizes.
func BenchmarkSQLiteColdReads(b *testing.B) {
	for _, kib := range []int{16384, 4096, 1024, 256} {
		b.Run(fmt.Sprintf("reader-cache=%dKiB", kib), func(b *testing.B) {
			defer func(was int) { readerCacheKiB = was }(readerCacheKiB)
			readerCacheKiB = kib
			s := benchStore(b, Options{HotObjects: -1})
			ctx := context.Background()
			const n = 10000
			pad := strings.Repeat("x", 1500)
			objs := make([]api.Object, n)
			for i := range objs {
				node := fixtures.Node(fmt.Sprintf("fleet-%05d", i), map[string]string{"topology.kubernetes.io/zone": "zone-1"})
				node.Annotations = map[string]string{"pad": pad}
				objs[i] = node
			}
			pods := make([]api.Object, n)
			for i := range pods {
				pods[i] = fixtures.Pod("default", fmt.Sprintf("web-%08d", i), map[string]string{"app": "web"})
			}
			for _, batch := range [][]api.Object{objs, pods} {
				for lo := 0; lo < n; lo += 1024 {
					for _, err := range s.CreateBatch(ctx, batch[lo:min(lo+1024, n)]) {
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			cpu := testenv.ProcessCPU(b)
			b.ResetTimer()
			parallel(b, 8, b.N, func(w, i int) error {
				switch {
				case i%2048 == 1:
					_, _, err := s.ListRaw(ctx, "pods", ListOptions{Namespace: "default"})
					return err
				case i%16 == 0:
					p := fixtures.Pod("default", fmt.Sprintf("web-%08d", (i*7919)%n), map[string]string{"app": "web"})
					p.Status.Message = fmt.Sprint("update ", i)
					return s.Update(ctx, p)
				}
				_, _, err := s.GetRaw(ctx, "nodes", "", fmt.Sprintf("fleet-%05d", (i*7919+w)%n))
				return err
			})
			b.ReportMetric(float64((testenv.ProcessCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
