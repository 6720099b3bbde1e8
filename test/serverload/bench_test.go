package serverload

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCreatesHTTPS measures durable creates per second over HTTPS
// from -serverload.clients concurrent clients (50), each with its own
// TLS connection, for -serverload.duration per iteration, against the
// real binary. The load generator shares the machine with the server.
func BenchmarkCreatesHTTPS(b *testing.B) {
	kinds := []struct {
		name, path string
		body       func(name string) []byte
	}{
		{"pods", "/api/v1/namespaces/default/pods", func(n string) []byte { return podBody(n, "") }},
		{"configmaps", cmPath, func(n string) []byte { return configMapBody(n, 1, 0) }},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			p := startServer(b, b.TempDir())
			clients := make([]*http.Client, *flagClients)
			for i := range clients {
				clients[i] = p.client(1)
				defer clients[i].CloseIdleConnections()
				p.mustDo(clients[i], http.MethodGet, "/readyz", "", nil, http.StatusOK) // TLS handshake before timing
			}
			var created int64
			var elapsed time.Duration
			var lat latencies
			b.ResetTimer()
			for iter := range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), *flagDuration)
				var n atomic.Int64
				var failed atomic.Value
				var wg sync.WaitGroup
				start := time.Now()
				for ci, c := range clients {
					wg.Go(func() {
						for j := 0; ; j++ {
							t0 := time.Now()
							code, body, err := p.do(ctx, c, http.MethodPost, k.path, "application/json", k.body(fmt.Sprintf("i%d-c%d-%d", iter, ci, j)))
							if ctx.Err() != nil {
								return
							}
							if err != nil || code != http.StatusCreated {
								failed.CompareAndSwap(nil, fmt.Sprintf("create = %d %s, %v", code, body, err))
								return
							}
							lat.add(time.Since(t0))
							n.Add(1)
						}
					})
				}
				wg.Wait()
				elapsed += time.Since(start)
				cancel()
				if f := failed.Load(); f != nil {
					b.Fatal(f)
				}
				created += n.Load()
			}
			b.StopTimer()
			s := lat.sorted()
			b.ReportMetric(float64(created)/elapsed.Seconds(), "creates/s")
			b.ReportMetric(ms(percentile(s, 0.5)), "p50-ms")
			b.ReportMetric(ms(percentile(s, 0.99)), "p99-ms")
			p.stop()
		})
	}
}

// BenchmarkAssignmentLatency measures how long a pod bound to a node
// takes to reach that node's assignment stream. -serverload.agents
// simulated agents (1 000), each a Node created through the API with its
// own HTTPS client and TLS connection, hold
// `GET /api/v1/pods?watch=true&fieldSelector=spec.nodeName=<node>` with
// the admin token. Pods are created with spec.nodeName set, round-robin
// over the nodes, at -serverload.bindrate per second by 32 concurrent
// binders. Reported: from the write's acknowledgement (the 201 read by
// the binder) to the event read on the node's stream — zero when the
// event came first, which the store allows, as it publishes to watchers
// before it answers the writer — and from the write's start (end to end).
func BenchmarkAssignmentLatency(b *testing.B) {
	p := startServer(b, b.TempDir())
	createNodes(b, p, *flagAgents)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	arr := &arrivals{at: map[string]time.Time{}}
	startAgents(ctx, b, p, *flagAgents, arr)

	binders := p.client(32)
	defer binders.CloseIdleConnections()
	p.mustDo(binders, http.MethodGet, "/readyz", "", nil, http.StatusOK) // TLS handshake before timing
	var ackLat, e2eLat []time.Duration
	var early int
	b.ResetTimer()
	for iter := range b.N {
		type bound struct{ start, ack time.Time }
		acks := make([]bound, *flagPods)
		work := make(chan int)
		var failed atomic.Value
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for i := range work {
					name := fmt.Sprintf("i%d-p%d", iter, i)
					t0 := time.Now()
					code, body, err := p.do(ctx, binders, http.MethodPost, "/api/v1/namespaces/default/pods", "application/json", podBody(name, nodeName(i%*flagAgents)))
					if err != nil || code != http.StatusCreated {
						failed.CompareAndSwap(nil, fmt.Sprintf("bind %s = %d %s, %v", name, code, body, err))
						continue
					}
					acks[i] = bound{start: t0, ack: time.Now()}
				}
			})
		}
		pace := time.NewTicker(time.Second / time.Duration(*flagBindRate))
		for i := range *flagPods {
			<-pace.C
			work <- i
		}
		pace.Stop()
		close(work)
		wg.Wait()
		if f := failed.Load(); f != nil {
			b.Fatal(f)
		}
		want := int64((iter + 1) * *flagPods)
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		arrived := waitFor(wctx, func() bool { return arr.count.Load() >= want })
		wcancel()
		if got := arr.count.Load(); !arrived {
			b.Fatalf("%d of %d pods reached their node's stream within 60s", got, want)
		}
		arr.mu.Lock()
		for i, a := range acks {
			at := arr.at[fmt.Sprintf("i%d-p%d", iter, i)]
			d := at.Sub(a.ack)
			if d < 0 {
				early++
				d = 0
			}
			ackLat = append(ackLat, d)
			e2eLat = append(e2eLat, at.Sub(a.start))
		}
		arr.mu.Unlock()
	}
	b.StopTimer()
	if m := arr.misroute.Load(); m > 0 {
		b.Fatalf("%d events reached a stream of another node", m)
	}
	slices.Sort(ackLat)
	slices.Sort(e2eLat)
	b.ReportMetric(ms(percentile(ackLat, 0.5)), "ack-p50-ms")
	b.ReportMetric(ms(percentile(ackLat, 0.99)), "ack-p99-ms")
	b.ReportMetric(ms(percentile(e2eLat, 0.5)), "e2e-p50-ms")
	b.ReportMetric(ms(percentile(e2eLat, 0.99)), "e2e-p99-ms")
	b.ReportMetric(100*float64(early)/float64(len(ackLat)), "event-first-%")
	st := p.stats()
	b.ReportMetric(float64(st.rssKB)/1024, "rss-MB")
	cancel()
	p.stop()
}
