package storage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/internal/pgtest"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// The backend benchmarks compare SQLite and PostgreSQL in one run on one
// machine. PostgreSQL is a private cluster with fsync on (synchronous
// commit, as in production), reached over its Unix socket; SQLite keeps
// synchronous=FULL. Both files live under os.TempDir.

// benchCluster starts a durable private cluster for one benchmark.
func benchCluster(b *testing.B) *pgtest.Cluster {
	b.Helper()
	return pgtest.Start(b, pgtest.Options{Fsync: true})
}

func benchOpen(b *testing.B, c *pgtest.Cluster, backend string, opts storage.Options) storage.Options {
	b.Helper()
	if backend == "postgres" {
		opts.Postgres = c.Database(b)
	} else {
		opts.Path = filepath.Join(b.TempDir(), "bench.db")
	}
	return opts
}

// spread runs n calls of fn over writers goroutines.
func spread(b *testing.B, writers, n int, fn func(w, i int) error) {
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

// BenchmarkBackendsCreateDurable: durable creates of 1.5 KiB pods from 64
// writers, SQLite against PostgreSQL.
func BenchmarkBackendsCreateDurable(b *testing.B) {
	c := benchCluster(b)
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend+"/writers=64", func(b *testing.B) {
			s := storagetest.OpenAt(b, benchOpen(b, c, backend, storage.Options{}))
			ctx := context.Background()
			b.ResetTimer()
			spread(b, 64, b.N, func(_, i int) error {
				return s.Create(ctx, storagetest.Pod("default", fmt.Sprint("p", i), map[string]string{"app": "bench"}))
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			st := s.Stats()
			b.ReportMetric(float64(st.Writes)/float64(max(st.Commits, 1)), "writes/commit")
		})
	}
}

// BenchmarkPostgresList10kPods lists 10,000 pods from PostgreSQL.
func BenchmarkPostgresList10kPods(b *testing.B) {
	const n = 10_000
	c := benchCluster(b)
	s := storagetest.OpenAt(b, benchOpen(b, c, "postgres", storage.Options{}))
	ctx := context.Background()
	spread(b, 64, n, func(_, i int) error {
		p := storagetest.Pod(fmt.Sprint("ns", i%10), fmt.Sprint("p", i), map[string]string{"app": fmt.Sprint("a", i%100)})
		p.Spec.NodeName = fmt.Sprint("n", i%100)
		return s.Create(ctx, p)
	})
	b.Run("raw", func(b *testing.B) {
		for b.Loop() {
			raw, _, err := s.ListRaw(ctx, "pods", storage.ListOptions{})
			if err != nil || len(raw) != n {
				b.Fatalf("ListRaw = %d, %v; want %d", len(raw), err, n)
			}
		}
	})
	b.Run("decoded", func(b *testing.B) {
		for b.Loop() {
			objs, _, err := s.List(ctx, "pods", storage.ListOptions{})
			if err != nil || len(objs) != n {
				b.Fatalf("List = %d, %v; want %d", len(objs), err, n)
			}
		}
	})
	b.Run("raw-by-node", func(b *testing.B) {
		sel, err := fields.Parse("spec.nodeName=n7")
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			raw, _, err := s.ListRaw(ctx, "pods", storage.ListOptions{Fields: sel})
			if err != nil || len(raw) != n/100 {
				b.Fatalf("ListRaw = %d, %v; want %d", len(raw), err, n/100)
			}
		}
	})
}

// BenchmarkPostgresCrossServerWatch: 8 writers update pods through server
// A; a watcher on server B (another Store on the same database) receives
// each event. p50/p99/max are from the start of the write on A (so they
// include A's commit and its queueing): an upper bound of commit-to-event.
// p99-after-ack is from A acknowledging the write: a lower bound.
func BenchmarkPostgresCrossServerWatch(b *testing.B) {
	const writers = 8
	c := benchCluster(b)
	opts := benchOpen(b, c, "postgres", storage.Options{})
	sa := storagetest.OpenAt(b, opts)
	sb := storagetest.OpenAt(b, opts)
	ctx := context.Background()
	pods := make([]*api.Pod, writers)
	for w := range pods {
		pods[w] = storagetest.Pod("default", fmt.Sprint("p", w), nil)
		if err := sa.Create(ctx, pods[w]); err != nil {
			b.Fatal(err)
		}
	}
	w, err := sb.Watch(ctx, "pods", storage.WatchOptions{Revision: sa.Revision()})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	arrived := make(map[int64]time.Time, b.N)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.Events() {
			arrived[ev.Revision] = time.Now()
			if len(arrived) == b.N {
				return
			}
		}
	}()
	var mu sync.Mutex
	started := make(map[int64]time.Time, b.N)
	acked := make(map[int64]time.Time, b.N)
	b.ResetTimer()
	spread(b, writers, b.N, func(wr, i int) error {
		p := pods[wr]
		p.Status.Message = fmt.Sprint("update ", i)
		t0 := time.Now()
		if err := sa.Update(ctx, p); err != nil {
			return err
		}
		t1 := time.Now()
		rev, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
		mu.Lock()
		started[rev], acked[rev] = t0, t1
		mu.Unlock()
		return nil
	})
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		b.Fatalf("server B saw %d of %d events", len(arrived), b.N)
	}
	b.StopTimer()
	// From the write's start (an upper bound of commit-to-event) and
	// from its acknowledgement on A (a lower bound, 0 when B was first).
	var upper, lower []time.Duration
	for rev, t0 := range started {
		upper = append(upper, arrived[rev].Sub(t0))
		lower = append(lower, max(0, arrived[rev].Sub(acked[rev])))
	}
	slices.Sort(upper)
	slices.Sort(lower)
	q := func(lat []time.Duration, p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(upper, 0.50), "p50-ms")
	b.ReportMetric(q(upper, 0.99), "p99-ms")
	b.ReportMetric(q(lower, 0.99), "p99-after-ack-ms")
	b.ReportMetric(q(upper, 1), "max-ms")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "updates/s")
}
