// Package schedlat writes the Go runtime's scheduling-latency and GC-pause
// histograms as quantiles, for measurement builds and test tools (the
// fleet simulator, `go build -tags fleetprof`): where a request's wait
// went when no lock shows in a profile. It is not linked into the release
// binary.
package schedlat
