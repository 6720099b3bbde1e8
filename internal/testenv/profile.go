package testenv

import (
	"os"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"
)

// CPUProfile writes a CPU profile to path from now until the returned
// stop is called: for a benchmark's timed part only. An empty path
// profiles nothing.
func CPUProfile(tb testing.TB, path string) (stop func()) {
	tb.Helper()
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			tb.Error(err)
		}
	}
}

// ProcessCPU returns the process's user plus system CPU time so far: a
// benchmark reports the difference across its timed part as CPU a
// operation, the work of every goroutine it started included.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
