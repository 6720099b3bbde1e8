package storage

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// BenchmarkWatchCacheMemory writes 1000 ConfigMaps of 64 KiB (64 MiB of
// values) and reports the heap in use afterwards, with the watch cache
// bounded by count alone (4096 changes, as before WatchCacheBytes) and by
// the default byte bound too.
func BenchmarkWatchCacheMemory(b *testing.B) {
	for _, tc := range []struct {
		name  string
		bytes int64
	}{{"count-only", -1}, {"bytes-32MiB", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				s := benchStore(b, Options{WatchCacheBytes: tc.bytes, CompactInterval: -1})
				value := strings.Repeat("x", 64<<10)
				ctx := context.Background()
				parallel(b, 8, 1000, func(_, i int) error {
					return s.Create(ctx, &api.ConfigMap{
						TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
						ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("big-%04d", i), Namespace: "default"},
						Data:       map[string]string{"v": value},
					})
				})
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-inuse-MiB")
				s.bc.mu.Lock()
				b.ReportMetric(float64(s.bc.bytes)/(1<<20), "watch-cache-MiB")
				s.bc.mu.Unlock()
				s.Close()
			}
		})
	}
}
