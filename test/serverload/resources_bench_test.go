package serverload

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkServerResources measures the server process's memory (VmRSS
// and its peak VmHWM from /proc/<pid>/status) and CPU (utime+stime from
// /proc/<pid>/stat over a measured window, as % of one core):
//
//   - idle: a fresh `skiff server --disable-agent`, after
//     -serverload.settle, over -serverload.idlewindow;
//   - nodes: -serverload.agents simulated nodes (1 000), each created
//     through the API with its own HTTPS client and TLS connection,
//     holding its assignment watch stream (-serverload.watch) and
//     heartbeating every -serverload.heartbeat (10 s), staggered evenly,
//     with the agent's lightweight call (POST
//     /api/v1/skiff/nodes/<n>/heartbeat), or with -serverload.patchbeats
//     a merge patch of /api/v1/nodes/<n>/status whose Ready condition has
//     a new lastHeartbeatTime. After one heartbeat period of warm-up, CPU
//     is measured over -serverload.window (60 s).
func BenchmarkServerResources(b *testing.B) {
	b.Run("idle", func(b *testing.B) {
		for range b.N {
			p := startServer(b, b.TempDir())
			<-time.After(*flagSettle) // let start-up settle; a measurement, not a result
			s0, t0 := p.stats(), time.Now()
			<-time.After(*flagIdleWindow)
			s1 := p.stats()
			reportResources(b, s0, s1, time.Since(t0))
			p.stop()
		}
	})
	b.Run("nodes", func(b *testing.B) {
		for range b.N {
			benchHeartbeats(b)
		}
	})
}

func reportResources(b *testing.B, s0, s1 procStats, d time.Duration) {
	b.ReportMetric(float64(s1.rssKB)/1024, "rss-MB")
	b.ReportMetric(float64(s1.hwmKB)/1024, "peak-rss-MB")
	b.ReportMetric(cpuPercent(s0, s1, d), "cpu-%")
}

func benchHeartbeats(b *testing.B) {
	n, period := *flagAgents, *flagHeartbeat
	p := startServer(b, b.TempDir())
	createNodes(b, p, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var agents []*agent
	if *flagWatch {
		agents = startAgents(ctx, b, p, n, nil)
	} else {
		for i := range n {
			agents = append(agents, &agent{node: nodeName(i), client: p.client(1)})
		}
		b.Cleanup(func() {
			for _, a := range agents {
				a.client.CloseIdleConnections()
			}
		})
	}

	var lat latencies
	var beats atomic.Int64
	var failed atomic.Value
	since := time.Now()
	for i, a := range agents {
		go func() {
			// Stagger the nodes evenly over one period, as agents started
			// at random times are.
			select {
			case <-time.After(period * time.Duration(i) / time.Duration(n)):
			case <-ctx.Done():
				return
			}
			tick := time.NewTicker(period)
			defer tick.Stop()
			for {
				t0 := time.Now()
				var code int
				var body []byte
				var err error
				want := http.StatusNoContent
				if *flagPatchBeats {
					want = http.StatusOK
					code, body, err = p.do(ctx, a.client, http.MethodPatch, "/api/v1/nodes/"+a.node+"/status", "application/merge-patch+json", heartbeatBody(t0, since))
				} else {
					code, body, err = p.do(ctx, a.client, http.MethodPost, "/api/v1/skiff/nodes/"+a.node+"/heartbeat", "", nil)
				}
				if ctx.Err() != nil {
					return
				}
				if err != nil || code != want {
					failed.CompareAndSwap(nil, fmt.Sprintf("heartbeat %s = %d %s, %v", a.node, code, body, err))
					return
				}
				lat.add(time.Since(t0))
				beats.Add(1)
				select {
				case <-tick.C:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	<-time.After(period) // warm-up: every node has heartbeat once
	s0, b0, t0 := p.stats(), beats.Load(), time.Now()
	<-time.After(*flagWindow)
	s1, b1, d := p.stats(), beats.Load(), time.Since(t0)
	cancel()
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
	reportResources(b, s0, s1, d)
	s := lat.sorted()
	b.ReportMetric(float64(b1-b0)/d.Seconds(), "heartbeats/s")
	b.ReportMetric(ms(percentile(s, 0.5)), "hb-p50-ms")
	b.ReportMetric(ms(percentile(s, 0.99)), "hb-p99-ms")
	p.stop()
}
