package schedlat

import (
	"runtime/metrics"
	"strings"
	"testing"
)

func TestQuantiles(t *testing.T) {
	h := &metrics.Float64Histogram{Counts: []uint64{90, 9, 1}, Buckets: []float64{0, 0.001, 0.01, 0.1}}
	if got, want := quantiles(h), " p50<=1ms p90<=1ms p99<=10ms p99.9<=100ms p100<=100ms"; got != want {
		t.Errorf("quantiles = %q; want %q", got, want)
	}
	if got := quantiles(&metrics.Float64Histogram{Counts: []uint64{0}, Buckets: []float64{0, 1}}); got != "" {
		t.Errorf("quantiles(empty) = %q; want \"\"", got)
	}
}

func TestWriteNamesBothHistograms(t *testing.T) {
	var b strings.Builder
	if err := Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.Contains(b.String(), n+" count ") {
			t.Errorf("Write = %q; want a line for %s", b.String(), n)
		}
	}
}
