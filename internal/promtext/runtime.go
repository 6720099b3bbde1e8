package promtext

import (
	"math"
	"runtime/metrics"
)

// SchedLatencyBounds are the le bounds of the scheduling-latency
// histogram, in seconds: from 10 µs, where a goroutine on an idle core
// waits, to a second, where a saturated server's do.
var SchedLatencyBounds = []float64{0.00001, 0.0001, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

// RuntimeHistogram reads the Go runtime's histogram name (a runtime/metrics
// Float64Histogram, such as "/sched/latencies:seconds") into a Snapshot
// with the given bounds: each bound counts the runtime's buckets that end
// at or below it. The runtime keeps no sum, so Sum adds up each bucket's
// lower edge: a lower bound of the true sum. ok is false when this Go
// runtime has no such histogram.
func RuntimeHistogram(name string, bounds []float64) (s Snapshot, ok bool) {
	sample := []metrics.Sample{{Name: name}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return s, false
	}
	return rebucket(sample[0].Value.Float64Histogram(), bounds), true
}

// rebucket folds h into bounds.
func rebucket(h *metrics.Float64Histogram, bounds []float64) Snapshot {
	s := Snapshot{Bounds: bounds, Cumulative: make([]uint64, len(bounds))}
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		s.Count += c
		if !math.IsInf(lo, -1) && lo > 0 {
			s.Sum += lo * float64(c)
		}
		for j, b := range bounds {
			if hi <= b {
				s.Cumulative[j] += c
			}
		}
	}
	return s
}
