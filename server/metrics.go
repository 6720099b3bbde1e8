package server

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/scheduler"
	"github.com/skiffhq/skiff/storage"
)

// serverMetrics is the server's /metrics: HTTP requests by resource, verb
// and code with latency, watch streams, the store's counters and node
// liveness, plus the Go runtime and process figures. It is a private
// metrics.Set, so two servers in one process (tests) do not share
// counters.
type serverMetrics struct {
	set     *metrics.Set
	watches *metrics.Counter // open watch streams, as a gauge (Inc/Dec)
}

func newServerMetrics(st *storage.Store, live *apiserver.Liveness) *serverMetrics {
	m := &serverMetrics{set: metrics.NewSet()}
	m.watches = m.set.NewCounter("skiff_http_watch_streams")
	m.set.RegisterMetricsWriter(func(w io.Writer) {
		s := st.Stats()
		metrics.WriteGaugeUint64(w, "skiff_store_revision", uint64(s.Revision))
		metrics.WriteGaugeUint64(w, "skiff_store_compacted_revision", uint64(s.CompactedRevision))
		metrics.WriteCounterUint64(w, "skiff_store_commits_total", uint64(s.Commits))
		metrics.WriteCounterUint64(w, "skiff_store_writes_total", uint64(s.Writes))
		metrics.WriteCounterUint64(w, "skiff_store_failed_commits_total", uint64(s.FailedCommits))
		metrics.WriteCounterFloat64(w, "skiff_store_commit_seconds_total", s.CommitTime.Seconds())
		metrics.WriteGaugeUint64(w, "skiff_store_watchers", uint64(s.Watchers))
		metrics.WriteGaugeUint64(w, "skiff_nodes_heartbeating", uint64(len(live.Snapshot())))
	})
	return m
}

// watchStarted counts an open watch stream until the returned func runs.
func (m *serverMetrics) watchStarted() (ended func()) {
	if m == nil {
		return func() {}
	}
	m.watches.Inc()
	return m.watches.Dec
}

// serveHTTP writes the metrics in the Prometheus text format.
func (m *serverMetrics) serveHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	m.set.WritePrometheus(w)
	metrics.WriteProcessMetrics(w)
}

// observe counts one finished request.
func (m *serverMetrics) observe(resource, verb string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.set.GetOrCreateCounter(fmt.Sprintf(`skiff_http_requests_total{resource=%q,verb=%q,code="%s"}`, resource, verb, strconv.Itoa(code))).Inc()
	if verb != "watch" { // a watch's duration is its lifetime, not latency
		m.set.GetOrCreateHistogram(fmt.Sprintf(`skiff_http_request_duration_seconds{resource=%q,verb=%q}`, resource, verb)).Update(d.Seconds())
	}
}

// knownResources bounds the resource label to what the API serves.
var knownResources = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range api.Resources() {
		m[r.Resource] = true
	}
	return m
}()

// requestLabels returns a low-cardinality resource label ("pods",
// "pods/status", "healthz", "other") and the Kubernetes verb of r.
func requestLabels(r *http.Request) (resource, verb string) {
	resource = "other"
	p := strings.TrimSuffix(r.URL.Path, "/")
	var segs []string
	switch {
	case p == "/healthz" || p == "/readyz" || p == "/version" || p == "/cacerts" || p == "/metrics":
		resource = p[1:]
	case p == "/api" || p == "/apis" || p == "/api/v1" || strings.Count(p, "/") <= 3 && strings.HasPrefix(p, "/apis/"):
		resource = "discovery"
	case strings.HasPrefix(p, "/openapi/"):
		resource = "openapi"
	case p == "/api/v1/join":
		resource = "join"
	case strings.HasPrefix(p, "/api/v1/skiff/tokens"):
		resource = "tokens"
	case strings.HasPrefix(p, "/api/v1/skiff/nodes/") && strings.HasSuffix(p, "/heartbeat"):
		resource = "heartbeat"
	case strings.HasPrefix(p, "/api/v1/skiff/nodes/"):
		resource = "nodeusage"
	case p == "" || p == "/index.html" || strings.HasPrefix(p, "/assets/"):
		resource = "dashboard"
	case strings.HasPrefix(p, "/api/v1/"):
		segs = strings.Split(p[len("/api/v1/"):], "/")
	case strings.HasPrefix(p, "/apis/"):
		if s := strings.Split(p[len("/apis/"):], "/"); len(s) > 2 {
			segs = s[2:]
		}
	}
	watch := r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
	if len(segs) > 0 && segs[0] == "watch" {
		watch, segs = true, segs[1:]
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	named := len(segs) > 1
	if len(segs) > 0 && knownResources[segs[0]] {
		resource = segs[0]
		if len(segs) > 2 && (segs[2] == "status" || segs[2] == "log" || segs[2] == "scale" || segs[2] == "eviction") {
			resource += "/" + segs[2]
		}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case named:
			verb = "get"
		case watch:
			verb = "watch"
		case segs != nil:
			verb = "list"
		default:
			verb = "get"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = "other"
	}
	return resource, verb
}

// addScheduler publishes the scheduler's figures: attempts by result,
// binds, preemptions, queue lengths and the latency histograms.
// current returns the running scheduler's (a new leadership term brings
// a new scheduler).
func (m *serverMetrics) addScheduler(current func() *scheduler.Metrics) {
	m.set.RegisterMetricsWriter(func(w io.Writer) {
		sm := current()
		for _, c := range []struct {
			result string
			n      int64
		}{{"scheduled", sm.Scheduled.Load()}, {"unschedulable", sm.Unschedulable.Load()}, {"error", sm.Errors.Load()}} {
			metrics.WriteCounterUint64(w, fmt.Sprintf(`skiff_scheduler_attempts_total{result=%q}`, c.result), uint64(c.n))
		}
		metrics.WriteCounterUint64(w, "skiff_scheduler_bind_conflicts_total", uint64(sm.BindConflicts.Load()))
		metrics.WriteCounterUint64(w, "skiff_scheduler_bind_batches_total", uint64(sm.BindBatches.Load()))
		metrics.WriteCounterUint64(w, "skiff_scheduler_preemptions_total", uint64(sm.Preemptions.Load()))
		metrics.WriteCounterUint64(w, "skiff_scheduler_preemption_victims_total", uint64(sm.Victims.Load()))
		active, backoff, unsched := sm.QueueLengths()
		metrics.WriteGaugeUint64(w, `skiff_scheduler_pending_pods{queue="active"}`, uint64(active))
		metrics.WriteGaugeUint64(w, `skiff_scheduler_pending_pods{queue="backoff"}`, uint64(backoff))
		metrics.WriteGaugeUint64(w, `skiff_scheduler_pending_pods{queue="unschedulable"}`, uint64(unsched))
		writeHistogram(w, "skiff_scheduler_e2e_scheduling_duration_seconds", &sm.E2E)
		writeHistogram(w, "skiff_scheduler_attempt_duration_seconds", &sm.Attempt)
	})
}

// writeHistogram writes h as a Prometheus histogram (le buckets).
func writeHistogram(w io.Writer, name string, h *scheduler.Histogram) {
	for i, c := range h.Buckets() {
		fmt.Fprintf(w, "%s_bucket{le=\"%g\"} %d\n", name, scheduler.BucketBound(i).Seconds(), c)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, h.Count())
	fmt.Fprintf(w, "%s_sum %g\n", name, h.Sum().Seconds())
	fmt.Fprintf(w, "%s_count %d\n", name, h.Count())
}
