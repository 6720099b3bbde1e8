package promtext

import (
	"math"
	"runtime/metrics"
	"testing"
)

func TestRebucket(t *testing.T) {
	h := &metrics.Float64Histogram{
		Buckets: []float64{math.Inf(-1), 0, 0.0005, 0.002, 0.02, math.Inf(1)},
		Counts:  []uint64{1, 10, 5, 3, 2},
	}
	s := rebucket(h, []float64{0.001, 0.01, 0.1})
	// ≤ 0.001: the buckets ending at 0 and 0.0005 (11); ≤ 0.01: and the
	// one ending at 0.002 (16); ≤ 0.1: and the one ending at 0.02 (19);
	// the one ending at +Inf only in Count.
	if want := []uint64{11, 16, 19}; s.Cumulative[0] != want[0] || s.Cumulative[1] != want[1] || s.Cumulative[2] != want[2] {
		t.Errorf("cumulative = %v; want %v", s.Cumulative, want)
	}
	if s.Count != 21 {
		t.Errorf("count = %d; want 21", s.Count)
	}
	if want := 5*0.0005 + 3*0.002 + 2*0.02; math.Abs(s.Sum-want) > 1e-12 {
		t.Errorf("sum = %v; want the lower edges' %v", s.Sum, want)
	}
}

func TestRuntimeHistogramSchedLatencies(t *testing.T) {
	s, ok := RuntimeHistogram("/sched/latencies:seconds", SchedLatencyBounds)
	if !ok {
		t.Fatal("no /sched/latencies:seconds in this runtime")
	}
	if s.Count == 0 {
		t.Error("no scheduling latencies counted: a test binary has scheduled goroutines")
	}
	for i := 1; i < len(s.Cumulative); i++ {
		if s.Cumulative[i] < s.Cumulative[i-1] || s.Cumulative[i] > s.Count {
			t.Fatalf("buckets not cumulative: %v of %d", s.Cumulative, s.Count)
		}
	}
	if _, ok := RuntimeHistogram("/no/such:seconds", SchedLatencyBounds); ok {
		t.Error("an unknown histogram was read")
	}
}
