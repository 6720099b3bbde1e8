// Command fleetsim is the fleet simulator: it builds (or takes) the skiff
// binary, starts `skiff server` on a temporary data dir on loopback and
// runs N simulated agents against it through the measured phases of
// fleet.Run, printing the figures. It is a test tool, not part of the
// product binary.
//
//	go run ./test/fleet/fleetsim -agents 10000
package main
