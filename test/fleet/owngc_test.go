package fleet

import (
	"bytes"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
)

// TestHoldOwnGCHoldsAndRestores: a held phase turns the simulator's
// collector off under a memory limit, and its end restores both settings
// and reports the collections that ran in it.
func TestHoldOwnGCHoldsAndRestores(t *testing.T) {
	old := debug.SetGCPercent(123)
	defer debug.SetGCPercent(old)
	oldLimit := debug.SetMemoryLimit(-1)
	var out bytes.Buffer
	r := &run{cfg: Config{HoldOwnGC: true, HoldHeadroom: 1 << 30, Progress: &out}}
	r.holdOwn("the steady window")
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GOGC in the held phase = %d; want -1 (off)", p)
	}
	if l := debug.SetMemoryLimit(-1); l == oldLimit || l < 1<<30 {
		t.Fatalf("memory limit in the held phase = %d; want the memory in use plus 1 GiB", l)
	}
	runtime.GC()
	r.releaseOwn()
	if p := debug.SetGCPercent(123); p != 123 {
		t.Errorf("GOGC after the phase = %d; want 123 back", p)
	}
	if l := debug.SetMemoryLimit(-1); l != oldLimit {
		t.Errorf("memory limit after the phase = %d; want %d back", l, oldLimit)
	}
	m := regexp.MustCompile(`own collections during the steady window \(held\): (\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no report of the phase's collections in %q", out.String())
	}
	if n, _ := strconv.Atoi(m[1]); n < 1 {
		t.Errorf("collections reported = %d; want the one run in the phase counted", n)
	}
	// Not held: settings untouched, the count still reported.
	out.Reset()
	r = &run{cfg: Config{Progress: &out}}
	r.holdOwn("restart 1")
	if p := debug.SetGCPercent(123); p != 123 {
		t.Errorf("GOGC with the hold off = %d; want 123 untouched", p)
	}
	r.releaseOwn()
	if !bytes.Contains(out.Bytes(), []byte("during restart 1 (as it paced itself)")) {
		t.Errorf("report with the hold off: %q", out.String())
	}
}
