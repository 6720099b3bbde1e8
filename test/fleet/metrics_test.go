package fleet

import (
	"testing"
	"time"
)

func TestParseBucketsQuantile(t *testing.T) {
	before := []byte(`# TYPE skiff_http_request_duration_seconds histogram
skiff_http_request_duration_seconds_bucket{resource="heartbeat",verb="create",le="0.001"} 10
skiff_http_request_duration_seconds_bucket{resource="heartbeat",verb="create",le="0.05"} 10
skiff_http_request_duration_seconds_bucket{resource="heartbeat",verb="create",le="+Inf"} 10
skiff_http_request_duration_seconds_bucket{resource="pods",verb="get",le="0.001"} 7
`)
	after := []byte(`skiff_http_request_duration_seconds_bucket{resource="heartbeat",verb="create",le="0.001"} 900
skiff_http_request_duration_seconds_bucket{resource="heartbeat",verb="create",le="0.05"} 1005
skiff_http_request_duration_seconds_bucket{resource="heartbeat",verb="create",le="+Inf"} 1010
skiff_http_request_duration_seconds_bucket{resource="heartbeat",verb="update",le="0.001"} 0
skiff_http_request_duration_seconds_bucket{resource="heartbeat",verb="update",le="0.05"} 0
skiff_http_request_duration_seconds_bucket{resource="heartbeat",verb="update",le="+Inf"} 0
skiff_http_request_duration_seconds_bucket{resource="pods",verb="get",le="0.001"} 7000
skiff_http_request_duration_seconds_sum{resource="heartbeat",verb="create"} 3
`)
	family := "skiff_http_request_duration_seconds"
	d := ParseBuckets(after, family, `resource="heartbeat"`).Since(ParseBuckets(before, family, `resource="heartbeat"`))
	if d.Total() != 1000 {
		t.Fatalf("total = %v; want 1000", d.Total())
	}
	// 890 ≤ 1 ms, 995 ≤ 50 ms, 1000 in all.
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, time.Millisecond}, {0.99, 50 * time.Millisecond}, {0.999, 1<<63 - 1}} {
		if got := d.Quantile(c.q); got != c.want {
			t.Errorf("Quantile(%v) = %v; want %v", c.q, got, c.want)
		}
	}
}
