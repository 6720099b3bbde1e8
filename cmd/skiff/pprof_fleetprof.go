//go:build fleetprof

package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
	"runtime/metrics"
)

// A measurement-only build (go build -tags fleetprof) serves
// net/http/pprof on $SKIFF_PPROF_ADDR, which must be a loopback
// address: the release binary never contains it. /debug/latencies adds
// the runtime's scheduling-latency and GC-pause histograms as quantiles
// (since start): where a request's wait went when no lock shows.
func init() {
	addr := os.Getenv("SKIFF_PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return
	}
	http.HandleFunc("/debug/latencies", func(w http.ResponseWriter, _ *http.Request) {
		s := []metrics.Sample{{Name: "/sched/latencies:seconds"}, {Name: "/sched/pauses/total/gc:seconds"}}
		metrics.Read(s)
		for _, m := range s {
			h := m.Value.Float64Histogram()
			var total uint64
			for _, c := range h.Counts {
				total += c
			}
			fmt.Fprintf(w, "%s count %d", m.Name, total)
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
				var seen uint64
				for i, c := range h.Counts {
					seen += c
					if float64(seen) >= q*float64(total) {
						fmt.Fprintf(w, " p%g<=%.3gms", q*100, h.Buckets[i+1]*1e3)
						break
					}
				}
			}
			fmt.Fprintln(w)
		}
	})
	go http.ListenAndServe(addr, nil) //nolint:errcheck // measurement only
}
