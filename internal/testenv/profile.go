package testenv

import (
	"os"
	"runtime/pprof"
	"testing"
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
