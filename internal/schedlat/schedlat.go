package schedlat

import (
	"fmt"
	"io"
	"net/http"
	"runtime/metrics"
)

// names are the histograms written, in order.
var names = []string{"/sched/latencies:seconds", "/sched/pauses/total/gc:seconds"}

// Write writes one line per histogram: its name, its count since the
// process started and the upper bounds of the buckets holding the 50th,
// 90th, 99th, 99.9th and 100th percentiles, in milliseconds.
func Write(w io.Writer) error {
	s := make([]metrics.Sample, len(names))
	for i, n := range names {
		s[i].Name = n
	}
	metrics.Read(s)
	for _, m := range s {
		if m.Value.Kind() != metrics.KindFloat64Histogram {
			continue
		}
		h := m.Value.Float64Histogram()
		if _, err := fmt.Fprintf(w, "%s count %d%s\n", m.Name, total(h), quantiles(h)); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves Write as text/plain.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		Write(w) //nolint:errcheck // a client gone mid-answer
	})
}

func total(h *metrics.Float64Histogram) uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// quantiles renders " p50<=Xms p90<=Yms ..."; empty for an empty
// histogram.
func quantiles(h *metrics.Float64Histogram) string {
	n := total(h)
	if n == 0 {
		return ""
	}
	out := ""
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		var seen uint64
		for i, c := range h.Counts {
			seen += c
			if float64(seen) >= q*float64(n) {
				out += fmt.Sprintf(" p%g<=%.3gms", q*100, h.Buckets[i+1]*1e3)
				break
			}
		}
	}
	return out
}
