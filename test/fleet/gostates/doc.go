// Command gostates reads a Go execution trace (a fleetprof server's
// /debug/pprof/trace) and says where the goroutines whose own stack
// holds a function spent their time: running, runnable (waiting for a
// core), in system calls, or waiting; what made them wait for a core;
// and where they made their system calls. It is how docs/benchmarks.md
// found the store's writer runnable four fifths of a placement (round
// fourteen), and its page reads and SQLite's checkpoint inside its
// commits (round eighteen).
//
//	go run . /tmp/place.trace 'storage.(*Store).writeLoop'
//
// With GOSTATES_BUCKET set to a duration (1s), it also prints each such
// goroutine's time in each state per interval of that length: whether a
// stage of a pipeline was short of work or short of a core, and when.
//
// It is a module of its own so that golang.org/x/exp stays out of
// skiff's.
package main
