package promtext

import (
	"bytes"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
)

func TestWriterPassesCheck(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	h := NewHistVec([]float64{0.1, 1})
	h.With(Labels("verb", "get")).Observe(0.05)
	h.With(Labels("verb", "get")).Observe(0.1) // le is inclusive
	h.With(Labels("verb", "get")).Observe(3)
	h.With(Labels("verb", `we"ird`)).Observe(0.5)
	c := NewCounterVec()
	c.Inc(Labels("code", "200"))
	c.Inc(Labels("code", "200"))
	w.Gauge("up_things", "Things up.\nTwo lines.", "", 3)
	c.Write(w, "reqs_total", "Requests.")
	h.Write(w, "lat_seconds", "Latency.")
	if err := w.Err(); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# HELP up_things Things up.\\nTwo lines.\n# TYPE up_things gauge\nup_things 3\n",
		`reqs_total{code="200"} 2`,
		"# TYPE lat_seconds histogram\n",
		`lat_seconds_bucket{verb="get",le="0.1"} 2`,
		`lat_seconds_bucket{verb="get",le="1"} 2`,
		`lat_seconds_bucket{verb="get",le="+Inf"} 3`,
		`lat_seconds_sum{verb="get"} 3.15`,
		`lat_seconds_count{verb="get"} 3`,
		`lat_seconds_bucket{verb="we\"ird",le="1"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("exposition lacks %q:\n%s", want, out)
		}
	}
	if err := Check(b.Bytes()); err != nil {
		t.Errorf("Check(own output) = %v\n%s", err, out)
	}
}

func TestCheckFindsProblems(t *testing.T) {
	hdr := "# HELP h x\n# TYPE h histogram\n"
	for name, text := range map[string]string{
		"no metadata":        "foo 1\n",
		"no TYPE":            "# HELP foo x\nfoo 1\n",
		"twice declared":     "# HELP foo x\n# TYPE foo gauge\n# HELP foo y\nfoo 1\n",
		"split family":       "# HELP a x\n# TYPE a gauge\n# HELP b x\n# TYPE b gauge\na 1\nb 1\na{x=\"1\"} 2\n",
		"bad value":          "# HELP a x\n# TYPE a gauge\na one\n",
		"vmrange buckets":    hdr + "h_bucket{vmrange=\"1e-3...2e-3\"} 1\nh_sum 1\nh_count 1\n",
		"no +Inf":            hdr + "h_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
		"no sum":             hdr + "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
		"count != +Inf":      hdr + "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
		"not cumulative":     hdr + "h_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n",
		"unterminated label": "# HELP a x\n# TYPE a gauge\na{x=\"1} 2\n",
	} {
		if err := Check([]byte(text)); err == nil {
			t.Errorf("Check(%s) = nil; want an error for\n%s", name, text)
		}
	}
}

// TestAnnotateProcessMetrics: VictoriaMetrics' process and runtime
// figures pass Check once annotated.
func TestAnnotateProcessMetrics(t *testing.T) {
	var raw, b bytes.Buffer
	metrics.WriteProcessMetrics(&raw)
	w := NewWriter(&b)
	Annotate(w, raw.Bytes())
	if err := Check(b.Bytes()); err != nil {
		t.Errorf("Check(annotated process metrics) = %v", err)
	}
	for _, want := range []string{"# TYPE process_resident_memory_bytes gauge\n", "# TYPE process_cpu_seconds_total counter\n", "# TYPE go_gc_duration_seconds summary\n", "go_goroutines "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("annotated output lacks %q", want)
		}
	}
	if strings.Contains(b.String(), "go_sched_latencies_seconds_bucket") {
		t.Error("the incomplete go_sched_latencies_seconds histogram was kept")
	}
}

func FuzzCheck(f *testing.F) {
	f.Add("# HELP a x\n# TYPE a histogram\na_bucket{le=\"1\",x=\"\\\"\"} 1\na_bucket{le=\"+Inf\"} 1\na_sum 1\na_count 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		Check([]byte(s)) // must not panic; errors are expected
	})
}
