package usage

import (
	"bytes"
	"net/http"
	"slices"

	"github.com/VictoriaMetrics/metrics"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/promtext"
)

// EvictionFigures is what /metrics shows of the eviction manager:
// *eviction.Manager.
type EvictionFigures interface {
	Evictions() map[string]uint64
	Conditions() []api.NodeCondition
}

// MetricsHandler serves the agent's /metrics: the latest report as
// cAdvisor- and kubelet-named families (container_cpu_usage_seconds_total,
// container_memory_working_set_bytes, pod network bytes, node usage),
// eviction counts and pressure, and the agent's own process figures.
// Figures are as of the last report (every Interval), not read per
// scrape: a scrape costs no cgroup reads.
type MetricsHandler struct {
	Reporter *Reporter
	Eviction EvictionFigures // may be nil
}

// ServeHTTP implements http.Handler.
func (h *MetricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var b bytes.Buffer
	pw := promtext.NewWriter(&b)
	WriteMetrics(pw, h.Reporter.Latest())
	if h.Eviction != nil {
		writeEviction(pw, h.Eviction)
	}
	var proc bytes.Buffer
	metrics.WriteProcessMetrics(&proc)
	promtext.Annotate(pw, proc.Bytes())
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b.Bytes())
}

// WriteMetrics writes rep's figures. Families are declared even when
// rep is empty, so dashboards see them from the first scrape.
func WriteMetrics(w *promtext.Writer, rep api.UsageReport) {
	const (
		cpu  = "container_cpu_usage_seconds_total"
		ws   = "container_memory_working_set_bytes"
		rss  = "container_memory_rss"
		rx   = "pod_network_receive_bytes_total"
		tx   = "pod_network_transmit_bytes_total"
		pcpu = "pod_cpu_usage_seconds_total"
		pws  = "pod_memory_working_set_bytes"
	)
	w.Declare(cpu, promtext.Counter, "Cumulative CPU time of a container's cgroup, in seconds.")
	for _, p := range rep.Pods {
		for _, c := range p.Containers {
			w.Sample(cpu, promtext.Labels("namespace", p.Namespace, "pod", p.Name, "container", c.Name), float64(c.CPUUsageNanos)/1e9)
		}
	}
	w.Declare(ws, promtext.Gauge, "A container's memory use less inactive file pages (the working set, as the kubelet computes it), in bytes.")
	for _, p := range rep.Pods {
		for _, c := range p.Containers {
			w.Sample(ws, promtext.Labels("namespace", p.Namespace, "pod", p.Name, "container", c.Name), float64(c.MemoryWorkingSet))
		}
	}
	w.Declare(rss, promtext.Gauge, "A container's anonymous memory (RSS), in bytes.")
	for _, p := range rep.Pods {
		for _, c := range p.Containers {
			w.Sample(rss, promtext.Labels("namespace", p.Namespace, "pod", p.Name, "container", c.Name), float64(c.MemoryRSS))
		}
	}
	w.Declare(pcpu, promtext.Counter, "Cumulative CPU time of a pod's cgroup, in seconds.")
	for _, p := range rep.Pods {
		w.Sample(pcpu, promtext.Labels("namespace", p.Namespace, "pod", p.Name), float64(p.CPUUsageNanos)/1e9)
	}
	w.Declare(pws, promtext.Gauge, "A pod's memory working set, in bytes.")
	for _, p := range rep.Pods {
		w.Sample(pws, promtext.Labels("namespace", p.Namespace, "pod", p.Name), float64(p.MemoryWorkingSet))
	}
	w.Declare(rx, promtext.Counter, "Bytes a pod's network namespace received, loopback excluded.")
	for _, p := range rep.Pods {
		if p.Network != nil {
			w.Sample(rx, promtext.Labels("namespace", p.Namespace, "pod", p.Name), float64(p.Network.RxBytes))
		}
	}
	w.Declare(tx, promtext.Counter, "Bytes a pod's network namespace sent, loopback excluded.")
	for _, p := range rep.Pods {
		if p.Network != nil {
			w.Sample(tx, promtext.Labels("namespace", p.Namespace, "pod", p.Name), float64(p.Network.TxBytes))
		}
	}
	w.Counter("node_cpu_usage_seconds_total", "Cumulative busy CPU time of the node, all CPUs, in seconds.", "", float64(rep.Node.CPUUsageNanos)/1e9)
	w.Gauge("node_memory_working_set_bytes", "The node's memory use less inactive file pages, in bytes.", "", float64(rep.Node.MemoryWorkingSet))
	w.Gauge("node_fs_capacity_bytes", "Size of the filesystem of the agent's data dir, in bytes.", "", float64(rep.Node.FsCapacity))
	w.Gauge("node_fs_available_bytes", "Free space on the filesystem of the agent's data dir, in bytes.", "", float64(rep.Node.FsAvailable))
}

func writeEviction(w *promtext.Writer, e EvictionFigures) {
	ev := e.Evictions()
	sigs := make([]string, 0, len(ev))
	for s := range ev {
		sigs = append(sigs, s)
	}
	slices.Sort(sigs)
	w.Declare("skiff_agent_evictions_total", promtext.Counter, "Pods the eviction manager evicted, by the signal that caused it.")
	for _, s := range sigs {
		w.Sample("skiff_agent_evictions_total", promtext.Labels("eviction_signal", s), float64(ev[s]))
	}
	w.Declare("skiff_agent_node_pressure", promtext.Gauge, "1 for each pressure condition the eviction manager holds true.")
	for _, c := range e.Conditions() {
		w.Sample("skiff_agent_node_pressure", promtext.Labels("condition", string(c.Type)), 1)
	}
}
