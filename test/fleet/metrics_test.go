package fleet

import (
	"slices"
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

func TestParseSample(t *testing.T) {
	text := []byte(`# TYPE skiff_tls_handshakes_total counter
skiff_tls_handshakes_total{result="ok"} 10005
skiff_tls_handshakes_total{result="failed"} 8410
skiff_tls_handshakes_totally_other 7
skiff_tls_handshakes_waiting 3
skiff_http_requests_total{resource="heartbeat",verb="create",code="429"} 59
skiff_http_requests_total{resource="stats",verb="create",code="429"} 41
skiff_http_requests_total{resource="stats",verb="create",code="200"} 1000
`)
	for _, tc := range []struct {
		family string
		match  []string
		want   float64
	}{
		{"skiff_tls_handshakes_total", []string{`result="ok"`}, 10005},
		{"skiff_tls_handshakes_total", nil, 18415},
		{"skiff_tls_handshakes_waiting", nil, 3},
		{"skiff_http_requests_total", []string{`code="429"`}, 100},
		{"skiff_http_requests_total", []string{`code="500"`}, 0},
	} {
		if got := ParseSample(text, tc.family, tc.match...); got != tc.want {
			t.Errorf("ParseSample(%s, %v) = %v; want %v", tc.family, tc.match, got, tc.want)
		}
	}
}

func TestSlowBeatSeconds(t *testing.T) {
	at := func(sec int, ms int) BeatTrace {
		return BeatTrace{Start: time.Date(2026, 11, 28, 22, 44, sec, ms*1e6, time.Local), Total: 150 * time.Millisecond}
	}
	slow := []BeatTrace{at(20, 1), at(20, 900), at(5, 0), at(31, 0), at(31, 10), at(31, 20), at(7, 0)}
	// Of the two seconds with one each, the earlier.
	if got, want := SlowBeatSeconds(slow, 3), "22:44:05 ×1, 22:44:20 ×2, 22:44:31 ×3"; got != want {
		t.Errorf("SlowBeatSeconds = %q; want %q", got, want)
	}
	if got := SlowBeatSeconds(nil, 3); got != "" {
		t.Errorf("no slow beats: %q; want empty", got)
	}
}

func TestTooManyByResource(t *testing.T) {
	text := []byte(`skiff_http_requests_total{resource="heartbeat",verb="create",code="429"} 59
skiff_http_requests_total{resource="stats",verb="create",code="429"} 141
skiff_http_requests_total{resource="stats",verb="create",code="204"} 900
skiff_http_requests_total{resource="pods",verb="list",code="429"} 0
`)
	if got, want := tooManyByResource(text), "stats create 141, heartbeat create 59"; got != want {
		t.Fatalf("tooManyByResource = %q; want %q", got, want)
	}
}

// TestStartWindowDropsCallsBegunBefore: a heartbeat or report that was
// in flight when the window opened is not the window's.
func TestStartWindowDropsCallsBegunBefore(t *testing.T) {
	m := NewMetrics()
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	m.Heartbeat(BeatTrace{Start: t0, Total: 10 * time.Millisecond})
	m.StartWindow(t0.Add(time.Second))
	m.Heartbeat(BeatTrace{Start: t0.Add(500 * time.Millisecond), Total: 3 * time.Second}) // held up across the opening
	m.Report(t0.Add(900*time.Millisecond), 2*time.Second)
	m.Heartbeat(BeatTrace{Start: t0.Add(time.Second), Total: 20 * time.Millisecond})
	m.Heartbeat(BeatTrace{Start: t0.Add(2 * time.Second), Total: 150 * time.Millisecond})
	m.Report(t0.Add(3*time.Second), 5*time.Millisecond)
	if beats := m.TakeHeartbeats(); !slices.Equal(beats, []time.Duration{20 * time.Millisecond, 150 * time.Millisecond}) {
		t.Errorf("heartbeats %v; want the two begun in the window", beats)
	}
	if reports := m.TakeReports(); !slices.Equal(reports, []time.Duration{5 * time.Millisecond}) {
		t.Errorf("reports %v; want the one begun in the window", reports)
	}
	if slow, _ := m.TakeSlowBeats(); len(slow) != 1 || slow[0].Total != 150*time.Millisecond {
		t.Errorf("slow beats %v; want the 150 ms one only", slow)
	}
}

// TestStreamEnds reads the server's stream-end counters by reason.
func TestStreamEnds(t *testing.T) {
	text := []byte(`# TYPE skiff_watch_stream_ends_total counter
skiff_watch_stream_ends_total{reason="client"} 12
skiff_watch_stream_ends_total{reason="write"} 3
skiff_watch_stream_ends_total{reason="done"} 0
skiff_watch_errors_total{reason="too_slow"} 7
skiff_watch_errors_total{reason="expired"} 269
`)
	want := "shared streams ended: client 12 write 3 done 0; their watches ended with an ERROR: too_slow 7 expired 269 closed 0 other 0"
	if got := streamEnds(text); got != want {
		t.Fatalf("streamEnds = %q; want %q", got, want)
	}
}
