package storage

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
)

// BenchmarkWatchCost opens 1000 watches of pods by node, as the agents'
// assignment streams are, lets each take one event (a pod bound to its
// node), and reports what a watch holds: heap and goroutine stacks in
// bytes, and goroutines. "events" reads them from Events (a goroutine per
// watch forwards them), "pull" from Next, as the API server's streams do.
func BenchmarkWatchCost(b *testing.B) {
	for _, mode := range []string{"events", "pull"} {
		b.Run(mode, func(b *testing.B) {
			s := benchStore(b, Options{CompactInterval: -1})
			ctx := context.Background()
			const n = 1000
			// Fill the watch cache first, so what it holds is the same
			// before and after and only the watches' cost is counted.
			parallel(b, 8, DefaultWatchCacheSize, func(_, i int) error {
				return s.Create(ctx, &api.Pod{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
					ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("fill-%d", i), Namespace: "default"},
					Spec:       api.PodSpec{NodeName: "elsewhere", Containers: []api.Container{{Name: "c", Image: "busybox"}}}})
			})
			for round := range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				g0 := runtime.NumGoroutine()
				ws := make([]*Watcher, n)
				for i := range ws {
					sel, err := fields.Parse(fmt.Sprintf("spec.nodeName=node-%d", i))
					if err != nil {
						b.Fatal(err)
					}
					if ws[i], err = s.Watch(ctx, "pods", WatchOptions{FromNow: true, Fields: sel}); err != nil {
						b.Fatal(err)
					}
					if mode == "events" {
						ws[i].Events()
					}
				}
				parallel(b, 8, n, func(_, i int) error {
					i-- // parallel counts from 1
					return s.Create(ctx, &api.Pod{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Pod"},
						ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("p%d-%d", round, i), Namespace: "default"},
						Spec:       api.PodSpec{NodeName: fmt.Sprintf("node-%d", i), Containers: []api.Container{{Name: "c", Image: "busybox"}}}})
				})
				for _, w := range ws {
					if mode == "events" {
						<-w.Events()
						continue
					}
					for {
						if _, ok := w.Next(); ok {
							break
						}
						<-w.Ready()
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				g1 := runtime.NumGoroutine()
				held := int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)
				b.ReportMetric(float64(held)/n, "bytes/watch")
				b.ReportMetric(float64(g1-g0)/n, "goroutines/watch")
				for _, w := range ws {
					w.Stop()
				}
			}
		})
	}
}
