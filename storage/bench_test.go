package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// The benchmarks open real files under b.TempDir() (os.TempDir must be on
// a real disk, not tmpfs, for the fsync figures to mean anything) and keep
// synchronous=FULL.

func benchStore(b *testing.B, opts Options) *Store {
	b.Helper()
	opts.Path = filepath.Join(b.TempDir(), "bench.db")
	s, err := Open(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// parallel runs n calls of fn spread over writers goroutines; fn gets the
// writer's number and the call's sequence number.
func parallel(b *testing.B, writers, n int, fn func(w, i int) error) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				if err := fn(w, i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkSQLiteCreateDurable(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := benchStore(b, Options{})
			ctx := context.Background()
			b.ResetTimer()
			parallel(b, writers, b.N, func(_, i int) error {
				return s.Create(ctx, fixtures.Pod("default", fmt.Sprint("p", i), map[string]string{"app": "bench"}))
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			b.ReportMetric(float64(b.N)/float64(s.commits.Load()), "writes/commit")
		})
	}
}

func BenchmarkSQLiteUpdate(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := benchStore(b, Options{})
			ctx := context.Background()
			pods := make([]*api.Pod, writers)
			for w := range pods {
				pods[w] = fixtures.Pod("default", fmt.Sprint("p", w), nil)
				if err := s.Create(ctx, pods[w]); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			parallel(b, writers, b.N, func(w, i int) error {
				p := pods[w]
				p.Status.Message = fmt.Sprint("update ", i)
				return s.Update(ctx, p)
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
			b.ReportMetric(float64(b.N)/float64(s.commits.Load()), "writes/commit")
		})
	}
}

// BenchmarkSQLiteWatchLatency measures, for 100 watchers of pods while 8
// writers update pods, the time from a batch's COMMIT returning to each
// watcher receiving each event.
func BenchmarkSQLiteWatchLatency(b *testing.B) {
	const watchers, writers = 100, 8
	s := benchStore(b, Options{})
	ctx := context.Background()
	pods := make([]*api.Pod, writers)
	for w := range pods {
		pods[w] = fixtures.Pod("default", fmt.Sprint("p", w), nil)
		if err := s.Create(ctx, pods[w]); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([][]time.Duration, watchers)
	var wg sync.WaitGroup
	for i := range watchers {
		w, err := s.Watch(ctx, "pods", WatchOptions{FromNow: true})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		wg.Go(func() {
			for ev := range w.Events() {
				lat[i] = append(lat[i], time.Since(ev.c.committed))
				if len(lat[i]) == b.N {
					return
				}
			}
			b.Errorf("watcher %d ended after %d events: %v", i, len(lat[i]), w.Err())
		})
	}
	b.ResetTimer()
	parallel(b, writers, b.N, func(w, i int) error {
		p := pods[w]
		p.Status.Message = fmt.Sprint("update ", i)
		return s.Update(ctx, p)
	})
	wg.Wait()
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	q := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(float64(all[len(all)-1])/float64(time.Millisecond), "max-ms")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}

func BenchmarkSQLiteList10kPods(b *testing.B) {
	const n = 10_000
	s := benchStore(b, Options{})
	ctx := context.Background()
	parallel(b, 64, n, func(_, i int) error {
		p := fixtures.Pod(fmt.Sprint("ns", i%10), fmt.Sprint("p", i), map[string]string{"app": fmt.Sprint("a", i%100)})
		p.Spec.NodeName = fmt.Sprint("n", i%100)
		return s.Create(ctx, p)
	})
	check := func(b *testing.B, got, want int) {
		if got != want {
			b.Fatalf("listed %d pods; want %d", got, want)
		}
	}
	b.Run("raw", func(b *testing.B) {
		var bytes int
		for b.Loop() {
			raw, _, err := s.ListRaw(ctx, "pods", ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			check(b, len(raw), n)
			bytes = 0
			for _, v := range raw {
				bytes += len(v)
			}
		}
		b.SetBytes(int64(bytes))
	})
	b.Run("decoded", func(b *testing.B) {
		for b.Loop() {
			objs, _, err := s.List(ctx, "pods", ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			check(b, len(objs), n)
		}
	})
	b.Run("raw-by-node", func(b *testing.B) {
		sel := mustFieldsB(b, "spec.nodeName=n7")
		for b.Loop() {
			raw, _, err := s.ListRaw(ctx, "pods", ListOptions{Fields: sel})
			if err != nil {
				b.Fatal(err)
			}
			check(b, len(raw), n/100)
		}
	})
	b.Run("raw-by-label", func(b *testing.B) {
		sel := mustLabelsB(b, "app=a7")
		for b.Loop() {
			raw, _, err := s.ListRaw(ctx, "pods", ListOptions{Labels: sel})
			if err != nil {
				b.Fatal(err)
			}
			check(b, len(raw), n/100)
		}
	})
}

// BenchmarkSQLiteWatchResume measures a watch resuming 1000 revisions
// back and reading them, served by the in-memory ring or by the change log.
func BenchmarkSQLiteWatchResume(b *testing.B) {
	for _, tc := range []struct {
		name string
		ring int
	}{{"ring", 0}, {"log", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			const back = 1000
			s := benchStore(b, Options{WatchCacheSize: tc.ring})
			ctx := context.Background()
			parallel(b, 64, 2*back, func(_, i int) error {
				return s.Create(ctx, fixtures.Pod("default", fmt.Sprint("p", i), nil))
			})
			from := s.Revision() - back
			for b.Loop() {
				w, err := s.Watch(ctx, "pods", WatchOptions{Revision: from})
				if err != nil {
					b.Fatal(err)
				}
				for range back {
					<-w.Events()
				}
				w.Stop()
			}
		})
	}
}
