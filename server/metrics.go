package server

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/promtext"
	"github.com/skiffhq/skiff/internal/version"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/controllers"
	"github.com/skiffhq/skiff/server/scheduler"
	"github.com/skiffhq/skiff/storage"
)

// serverMetrics is the server's /metrics: HTTP requests by resource, verb
// and code with latency, watch streams, the store's counters, node
// liveness, the scheduler's and the controllers' work queues, build info,
// plus the Go runtime and process figures. Every family carries # HELP
// and # TYPE and histograms have classic le buckets (package promtext),
// so Prometheus' histogram_quantile reads them. Each server has its own,
// so two servers in one process (tests) do not share counters.
type serverMetrics struct {
	requests *promtext.CounterVec
	latency  *promtext.HistVec
	sessions *promtext.CounterVec // exec, attach and port-forward sessions by subresource
	watches  atomic.Int64         // open watch streams

	mu      sync.Mutex
	writers []func(w *promtext.Writer) // figures read at scrape time

	// labels caches each request kind's label strings (resource, verb
	// and code are few), so observing a request builds none.
	labelsMu sync.RWMutex
	labels   map[requestKind]requestLabelSet
}

// requestKind is what a request is counted by.
type requestKind struct {
	resource, verb string
	code           int
}

// requestLabelSet are a requestKind's labels for the counter and for
// the latency histogram.
type requestLabelSet struct{ counter, latency string }

func newServerMetrics(st *storage.Store, live *apiserver.Liveness) *serverMetrics {
	m := &serverMetrics{requests: promtext.NewCounterVec(), latency: promtext.NewHistVec(promtext.LatencyBounds), sessions: promtext.NewCounterVec()}
	m.addWriter(func(w *promtext.Writer) {
		s := st.Stats()
		w.Gauge("skiff_store_revision", "The store's current revision.", "", float64(s.Revision))
		w.Gauge("skiff_store_compacted_revision", "The revision below which history is compacted.", "", float64(s.CompactedRevision))
		w.Counter("skiff_store_commits_total", "Write transactions committed.", "", float64(s.Commits))
		w.Counter("skiff_store_writes_total", "Objects written by committed transactions.", "", float64(s.Writes))
		w.Counter("skiff_store_failed_commits_total", "Write transactions rolled back by a database error.", "", float64(s.FailedCommits))
		w.Counter("skiff_store_commit_seconds_total", "Time spent committing, fsync included, in seconds.", "", s.CommitTime.Seconds())
		w.Counter("skiff_store_slow_writes_total", "Transactions and maintenance tasks that held the store's writer over half a second (each is logged).", "", float64(s.SlowWrites))
		w.Counter("skiff_store_hot_reads_total", "Point reads answered from the objects the store wrote last, without a database read.", "", float64(s.HotHits))
		w.Counter("skiff_store_cold_reads_total", "Point reads of objects not among those the store wrote last, which read the database.", "", float64(s.HotMisses))
		w.Gauge("skiff_store_watchers", "Open watches on the store.", "", float64(s.Watchers))
		w.Gauge("skiff_nodes_heartbeating", "Nodes that have sent a heartbeat since the server started.", "", float64(len(live.Snapshot())))
		if h, ok := promtext.RuntimeHistogram("/sched/latencies:seconds", promtext.SchedLatencyBounds); ok {
			w.Histogram("skiff_go_sched_latency_seconds", "How long this process's goroutines (the server's, and its local agent's when it runs one) waited for a core once runnable (Go's /sched/latencies), in seconds; a saturated server shows here first. _sum adds up bucket lower edges: a lower bound.", "", h)
		}
	})
	return m
}

func (m *serverMetrics) addWriter(f func(w *promtext.Writer)) {
	m.mu.Lock()
	m.writers = append(m.writers, f)
	m.mu.Unlock()
}

// watchStarted counts an open watch stream until watchEnded.
func (m *serverMetrics) watchStarted() {
	if m != nil {
		m.watches.Add(1)
	}
}

// watchEnded undoes watchStarted.
func (m *serverMetrics) watchEnded() {
	if m != nil {
		m.watches.Add(-1)
	}
}

// serveHTTP writes the metrics in the Prometheus text format.
func (m *serverMetrics) serveHTTP(w http.ResponseWriter, _ *http.Request) {
	var b bytes.Buffer
	m.write(&b)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}

// write renders the whole exposition.
func (m *serverMetrics) write(out io.Writer) {
	w := promtext.NewWriter(out)
	v := version.Get()
	w.Gauge("skiff_build_info", "Always 1; the labels say which skiff build runs.",
		promtext.Labels("version", v.GitVersion, "commit", v.GitCommit, "goversion", v.GoVersion), 1)
	m.requests.Write(w, "skiff_http_requests_total", "HTTP requests by resource, Kubernetes verb and status code.")
	m.latency.Write(w, "skiff_http_request_duration_seconds", "Time to answer HTTP requests (watches excluded), in seconds.")
	w.Gauge("skiff_http_watch_streams", "Open watch streams.", "", float64(m.watches.Load()))
	m.sessions.Write(w, "skiff_stream_sessions_total", "Exec, attach and port-forward sessions by subresource.")
	m.mu.Lock()
	writers := slices.Clone(m.writers)
	m.mu.Unlock()
	for _, f := range writers {
		f(w)
	}
	var proc bytes.Buffer
	metrics.WriteProcessMetrics(&proc)
	promtext.Annotate(w, proc.Bytes())
}

// observe counts one finished request.
func (m *serverMetrics) observe(resource, verb string, code int, d time.Duration) {
	if m == nil {
		return
	}
	ls := m.labelsOf(requestKind{resource, verb, code})
	m.requests.Inc(ls.counter)
	if verb != "watch" { // a watch's duration is its lifetime, not latency
		m.latency.With(ls.latency).Observe(d.Seconds())
	}
}

// labelsOf returns k's label strings, made once.
func (m *serverMetrics) labelsOf(k requestKind) requestLabelSet {
	m.labelsMu.RLock()
	ls, ok := m.labels[k]
	m.labelsMu.RUnlock()
	if ok {
		return ls
	}
	ls = requestLabelSet{
		counter: promtext.Labels("resource", k.resource, "verb", k.verb, "code", strconv.Itoa(k.code)),
		latency: promtext.Labels("resource", k.resource, "verb", k.verb),
	}
	m.labelsMu.Lock()
	defer m.labelsMu.Unlock()
	if m.labels == nil {
		m.labels = map[requestKind]requestLabelSet{}
	}
	m.labels[k] = ls
	return ls
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
	if p == apiserver.WatchesPath && r.Method == http.MethodGet {
		return "watches", "watch" // a stream, as a watch: out of the latency histogram
	}
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
	case strings.HasPrefix(p, "/api/v1/skiff/nodes/") && strings.HasSuffix(p, "/stats"):
		resource = "usagereports"
	case strings.HasPrefix(p, metricsPrefix+"/"):
		resource = "metrics.k8s.io"
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
	watch := isTrueParam(queryParam(r, "watch"))
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
	m.addWriter(func(w *promtext.Writer) {
		sm := current()
		if sm == nil {
			return
		}
		const attempts = "Scheduling attempts by result."
		w.Declare("skiff_scheduler_attempts_total", promtext.Counter, attempts)
		for _, c := range []struct {
			result string
			n      int64
		}{{"scheduled", sm.Scheduled.Load()}, {"unschedulable", sm.Unschedulable.Load()}, {"error", sm.Errors.Load()}} {
			w.Sample("skiff_scheduler_attempts_total", promtext.Labels("result", c.result), float64(c.n))
		}
		w.Counter("skiff_scheduler_bind_conflicts_total", "Binds that lost to a concurrent write.", "", float64(sm.BindConflicts.Load()))
		w.Counter("skiff_scheduler_bind_batches_total", "Batched bind transactions.", "", float64(sm.BindBatches.Load()))
		w.Counter("skiff_scheduler_preemptions_total", "Preemptions carried out.", "", float64(sm.Preemptions.Load()))
		w.Counter("skiff_scheduler_preemption_victims_total", "Pods evicted by preemption.", "", float64(sm.Victims.Load()))
		w.Counter("skiff_scheduler_effects_dropped_total", "Events and pod status writes dropped because their queue was full.", "", float64(sm.EffectsDropped.Load()))
		active, backoff, unsched := sm.QueueLengths()
		const pending = "Pods waiting to be scheduled, by queue."
		w.Declare("skiff_scheduler_pending_pods", promtext.Gauge, pending)
		w.Sample("skiff_scheduler_pending_pods", promtext.Labels("queue", "active"), float64(active))
		w.Sample("skiff_scheduler_pending_pods", promtext.Labels("queue", "backoff"), float64(backoff))
		w.Sample("skiff_scheduler_pending_pods", promtext.Labels("queue", "unschedulable"), float64(unsched))
		w.Histogram("skiff_scheduler_e2e_scheduling_duration_seconds", "Time from a pod entering the queue to its binding, in seconds.", "", schedSnapshot(&sm.E2E))
		w.Histogram("skiff_scheduler_attempt_duration_seconds", "Time of one scheduling attempt, in seconds.", "", schedSnapshot(&sm.Attempt))
	})
}

// addControllers publishes each controller's work queue: depth, adds,
// retries, time waiting in the queue and time reconciling.
// current returns the running leadership term's manager.
func (m *serverMetrics) addControllers(current func() *controllers.Manager) {
	m.addWriter(func(w *promtext.Writer) {
		cm := current()
		if cm == nil {
			return
		}
		qs := cm.QueueMetrics()
		families := []struct {
			name, help string
			t          promtext.Type
			value      func(q controllers.QueueMetrics) float64
		}{
			{"skiff_workqueue_depth", "Keys waiting in a controller's queue.", promtext.Gauge, func(q controllers.QueueMetrics) float64 { return float64(q.Depth) }},
			{"skiff_workqueue_adds_total", "Keys added to a controller's queue.", promtext.Counter, func(q controllers.QueueMetrics) float64 { return float64(q.Adds) }},
			{"skiff_workqueue_retries_total", "Keys queued again after a failed reconcile.", promtext.Counter, func(q controllers.QueueMetrics) float64 { return float64(q.Retries) }},
		}
		for _, f := range families {
			w.Declare(f.name, f.t, f.help)
			for _, q := range qs {
				w.Sample(f.name, promtext.Labels("name", q.Name), f.value(q))
			}
		}
		const wait = "Time a key waited in a controller's queue before a worker took it, in seconds."
		const work = "Time a controller took to reconcile one key, in seconds."
		w.Declare("skiff_workqueue_queue_duration_seconds", promtext.Histogram, wait)
		for _, q := range qs {
			w.Histogram("skiff_workqueue_queue_duration_seconds", wait, promtext.Labels("name", q.Name), q.Wait)
		}
		w.Declare("skiff_workqueue_work_duration_seconds", promtext.Histogram, work)
		for _, q := range qs {
			w.Histogram("skiff_workqueue_work_duration_seconds", work, promtext.Labels("name", q.Name), q.Work)
		}
	})
}

// schedSnapshot converts the scheduler's histogram to le buckets. Count
// is at least the last bucket's, so a scrape racing Observe stays valid.
func schedSnapshot(h *scheduler.Histogram) promtext.Snapshot {
	b := h.Buckets()
	s := promtext.Snapshot{Bounds: make([]float64, len(b)), Cumulative: make([]uint64, len(b)), Sum: h.Sum().Seconds()}
	for i, c := range b {
		s.Bounds[i] = scheduler.BucketBound(i).Seconds()
		s.Cumulative[i] = uint64(c)
	}
	s.Count = uint64(h.Count())
	if n := len(b); n > 0 && s.Cumulative[n-1] > s.Count {
		s.Count = s.Cumulative[n-1]
	}
	return s
}
