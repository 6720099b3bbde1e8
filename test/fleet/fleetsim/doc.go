// Command fleetsim is the fleet simulator: it builds (or takes) the skiff
// binary, starts `skiff server` on a temporary data dir on loopback and
// runs N simulated agents against it through the measured phases of
// fleet.Run, printing the figures. It is a test tool, not part of the
// product binary.
//
//	go run ./test/fleet/fleetsim -agents 10000
//
// Only the restarts, five of them, with the server's profiles kept when
// a restart stalls (a -tags fleetprof build serves them):
//
//	go build -tags fleetprof -o /tmp/skiff-prof ./cmd/skiff
//	SKIFF_PPROF_ADDR=127.0.0.1:27431 go run ./test/fleet/fleetsim -skiff /tmp/skiff-prof -keep \
//	    -agents 10000 -window 0 -pods 0 -replicas -1 -restarts 5
package main
