//go:build fleetprof

package main

import (
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"

	"github.com/skiffhq/skiff/internal/schedlat"
)

// A measurement-only build (go build -tags fleetprof) serves
// net/http/pprof on $SKIFF_PPROF_ADDR, which must be a loopback
// address: the release binary never contains it. /debug/latencies adds
// the runtime's scheduling-latency and GC-pause histograms (schedlat).
func init() {
	addr := os.Getenv("SKIFF_PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return
	}
	http.Handle("/debug/latencies", schedlat.Handler())
	go http.ListenAndServe(addr, nil) //nolint:errcheck // measurement only
}
