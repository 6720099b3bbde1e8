package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/labels"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/tunnel"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/server/usage"
	"github.com/skiffhq/skiff/storage"
)

// StatsPath is where an agent POSTs its api.UsageReport every 15 s (the
// pattern; {name} is the node). Reports are kept in memory only.
const StatsPath = "/api/v1/skiff/nodes/{name}/stats"

// maxReportBytes bounds a usage report's body: 1000 pods with their
// containers fit in well under a megabyte.
const maxReportBytes = 4 << 20

// metricsPrefix is where metrics.k8s.io/v1beta1 is served.
const metricsPrefix = "/apis/" + api.MetricsGroupVersion

// postStats answers POST StatsPath with 204: a node reports only for
// itself, an admin for any node (simulated fleets). A report is heard
// from the agent like a heartbeat, so it counts as one: an agent whose
// reports get through need not also beat in between. Like the heartbeat,
// it is answered 205 while the Node's Ready is the controller's Unknown,
// so that the agent sends its conditions again.
func (s *server) postStats(w http.ResponseWriter, r *http.Request) {
	name := nodeCallName(r)
	id := identityFrom(r.Context())
	if !id.Admin && id.Node != name {
		writeStatus(w, forbidden(id.String()+" may report usage only for its own node"))
		return
	}
	if errs := api.ValidateNodeName(name); errs != "" {
		writeStatus(w, api.NewBadRequest("node name %q: %s", name, errs))
		return
	}
	rep, status := readReport(r.Body)
	if status != nil {
		writeStatus(w, status)
		return
	}
	if err := usage.ValidateReport(&rep); err != nil {
		writeStatus(w, api.NewBadRequest("usage report: %v", err))
		return
	}
	// The Node must exist; a warm server knows without a store read (a
	// report every 15 s per agent).
	unknown, ok := s.knownNode(w, r, name)
	if !ok {
		return
	}
	now := s.clk.Now()
	s.measured.Add(name, rep, now)
	s.heard(w, name, now, unknown)
}

// reportBufs are the buffers usage reports are read into; a fleet's
// are hundreds a second, each about a kilobyte.
var reportBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readReport reads and strictly decodes a usage report body of at most
// maxReportBytes: one pass of the API's decoder over a pooled buffer,
// where a json.Decoder over the body allocated its own reading buffer
// and state for every report.
func readReport(body io.Reader) (api.UsageReport, *api.StatusError) {
	var rep api.UsageReport
	buf := reportBufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 64<<10 {
			reportBufs.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(io.LimitReader(body, maxReportBytes+1)); err != nil {
		return rep, api.NewBadRequest("usage report: read the body: %v", err)
	}
	if buf.Len() > maxReportBytes {
		return rep, api.NewStatusError(http.StatusRequestEntityTooLarge, api.StatusReasonRequestEntityTooLarge, "usage report over %d bytes", maxReportBytes)
	}
	if err := api.DecodeJSON(buf.Bytes(), &rep); err != nil {
		return api.UsageReport{}, api.NewBadRequest("usage report: %v", err)
	}
	return rep, nil
}

// metricsRoutes serves metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics
// (get and list) from the agents' latest reports. An admin reads every
// node's; a node credential only its own node and the pods it runs.
func (s *server) metricsRoutes(r chi.Router) {
	r.Get(metricsPrefix+"/nodes", s.listNodeMetrics)
	r.Get(metricsPrefix+"/nodes/{name}", s.getNodeMetrics)
	r.Get(metricsPrefix+"/pods", s.listPodMetrics)
	r.Get(metricsPrefix+"/namespaces/{namespace}/pods", s.listPodMetrics)
	r.Get(metricsPrefix+"/namespaces/{namespace}/pods/{name}", s.getPodMetrics)
}

// visibleNodes are the nodes whose reports id may read.
func (s *server) visibleNodes(id auth.Identity) []string {
	if id.Admin {
		return s.measured.Nodes()
	}
	return []string{id.Node}
}

func cpuQuantity(nanoCores uint64) resource.Quantity {
	return resource.MustParse(fmt.Sprintf("%dn", nanoCores))
}

func memoryQuantity(bytes uint64) resource.Quantity {
	return resource.MustParse(fmt.Sprintf("%dKi", bytes/1024))
}

func (s *server) nodeMetrics(name string, rate usage.Rate) api.NodeMetrics {
	m := api.NodeMetrics{
		TypeMeta:  api.TypeMeta{Kind: "NodeMetrics", APIVersion: api.MetricsGroupVersion},
		Timestamp: api.NewTime(rate.Time), Window: api.Duration{Duration: rate.Window},
		Usage: api.ResourceList{api.ResourceCPU: cpuQuantity(rate.CPUNanos), api.ResourceMemory: memoryQuantity(rate.Memory)},
	}
	m.Name = name
	m.CreationTimestamp = api.NewTime(s.clk.Now())
	return m
}

func podMetrics(p usage.PodRate, now api.Time) api.PodMetrics {
	m := api.PodMetrics{
		TypeMeta:  api.TypeMeta{Kind: "PodMetrics", APIVersion: api.MetricsGroupVersion},
		Timestamp: api.NewTime(p.Time), Window: api.Duration{Duration: p.Window}, Containers: []api.ContainerMetrics{},
	}
	m.Namespace, m.Name, m.CreationTimestamp = p.Namespace, p.Name, now
	for _, c := range p.Containers {
		m.Containers = append(m.Containers, api.ContainerMetrics{Name: c.Name,
			Usage: api.ResourceList{api.ResourceCPU: cpuQuantity(c.CPUNanos), api.ResourceMemory: memoryQuantity(c.Memory)}})
	}
	return m
}

// selected returns the names (nodes) or UIDs (pods) the request's
// labelSelector picks from the store, or nil when it has none.
func (s *server) selected(r *http.Request, resource, namespace string) (map[string]bool, error) {
	q := r.URL.Query().Get("labelSelector")
	if strings.TrimSpace(q) == "" {
		return nil, nil
	}
	sel, err := labels.Parse(q)
	if err != nil {
		return nil, api.NewBadRequest("labelSelector: %v", err)
	}
	objs, _, err := s.store.List(r.Context(), resource, storage.ListOptions{Namespace: namespace, Labels: sel})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", resource, err)
	}
	out := make(map[string]bool, len(objs))
	for _, o := range objs {
		m := o.GetObjectMeta()
		if resource == "nodes" {
			out[m.Name] = true
		} else {
			out[m.UID] = true
		}
	}
	return out, nil
}

func (s *server) writeMetricsError(w http.ResponseWriter, r *http.Request, err error) {
	var se *api.StatusError
	if errors.As(err, &se) {
		writeStatus(w, se)
		return
	}
	s.log.LogAttrs(r.Context(), slog.LevelError, "metrics api", slog.Any("err", err))
	writeStatus(w, api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "internal error"))
}

func (s *server) listNodeMetrics(w http.ResponseWriter, r *http.Request) {
	sel, err := s.selected(r, "nodes", "")
	if err != nil {
		s.writeMetricsError(w, r, err)
		return
	}
	now := s.clk.Now()
	list := api.NodeMetricsList{TypeMeta: api.TypeMeta{Kind: "NodeMetricsList", APIVersion: api.MetricsGroupVersion}, Items: []api.NodeMetrics{}}
	for _, n := range s.visibleNodes(identityFrom(r.Context())) {
		if sel != nil && !sel[n] {
			continue
		}
		if rate, ok := s.measured.Node(n, now, usage.DefaultStale); ok {
			list.Items = append(list.Items, s.nodeMetrics(n, rate))
		}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *server) getNodeMetrics(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	id := identityFrom(r.Context())
	if !id.Admin && id.Node != name {
		writeStatus(w, forbidden(id.String()+" may read only its own node's metrics"))
		return
	}
	rate, ok := s.measured.Node(name, s.clk.Now(), usage.DefaultStale)
	if !ok {
		writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "nodemetrics.metrics.k8s.io %q not found", name))
		return
	}
	writeJSON(w, http.StatusOK, s.nodeMetrics(name, rate))
}

// podMetricsOf lists the visible pods' metrics in namespace ("" all),
// optionally only the one named.
func (s *server) podMetricsOf(r *http.Request, namespace, name string) ([]api.PodMetrics, error) {
	sel, err := s.selected(r, "pods", namespace)
	if err != nil {
		return nil, err
	}
	now := s.clk.Now()
	stamp := api.NewTime(now)
	items := []api.PodMetrics{}
	for _, n := range s.visibleNodes(identityFrom(r.Context())) {
		for _, p := range s.measured.Pods(n, now, usage.DefaultStale) {
			if (namespace != "" && p.Namespace != namespace) || (name != "" && p.Name != name) || (sel != nil && !sel[p.UID]) {
				continue
			}
			items = append(items, podMetrics(p, stamp))
		}
	}
	return items, nil
}

func (s *server) listPodMetrics(w http.ResponseWriter, r *http.Request) {
	items, err := s.podMetricsOf(r, chi.URLParam(r, "namespace"), "")
	if err != nil {
		s.writeMetricsError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.PodMetricsList{TypeMeta: api.TypeMeta{Kind: "PodMetricsList", APIVersion: api.MetricsGroupVersion}, Items: items})
}

func (s *server) getPodMetrics(w http.ResponseWriter, r *http.Request) {
	ns, name := chi.URLParam(r, "namespace"), chi.URLParam(r, "name")
	items, err := s.podMetricsOf(r, ns, name)
	if err != nil {
		s.writeMetricsError(w, r, err)
		return
	}
	if len(items) == 0 {
		writeStatus(w, api.NewStatusError(http.StatusNotFound, api.StatusReasonNotFound, "podmetrics.metrics.k8s.io %q not found", name))
		return
	}
	writeJSON(w, http.StatusOK, items[0])
}

// NodeMetricsProxyPath is where the server relays a node agent's own
// /metrics, at the path Prometheus' Kubernetes discovery scrapes
// kubelets through the API server.
const NodeMetricsProxyPath = "/api/v1/nodes/{name}/proxy/metrics"

// maxAgentMetricsBytes bounds a relayed agent exposition.
const maxAgentMetricsBytes = 16 << 20

// proxyNodeMetrics relays GET NodeMetricsProxyPath to the node's agent
// over its tunnel (admin only; the server never dials the agent).
func (s *server) proxyNodeMetrics(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	if errs := api.ValidateNodeName(name); errs != "" {
		writeStatus(w, api.NewBadRequest("node name %q: %s", name, errs))
		return
	}
	if !s.tunnels.Connected(name) {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "the agent of node %s has no tunnel open", name))
		return
	}
	u := url.URL{Scheme: "http", Host: name, Path: tunnel.MetricsPath}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		writeStatus(w, api.NewBadRequest("%v", err))
		return
	}
	resp, err := s.tunnelRT.RoundTrip(req)
	if err != nil {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot reach the agent of node %s through its tunnel: %v", name, err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "the agent of node %s answered %s", name, resp.Status))
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, io.LimitReader(resp.Body, maxAgentMetricsBytes)); err != nil {
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "relay agent metrics", slog.String("node", name), slog.Any("err", err))
	}
}
