package usage

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/skiffhq/skiff/api"
)

// Bounds of what Measured keeps.
const (
	// DefaultMeasuredKeep is how many points of history are kept per
	// node: an hour of the agents' 20-second reports.
	DefaultMeasuredKeep = 180
	// MaxReportPods bounds the pods of one report, MaxReportContainers
	// the containers of one pod: a report beyond them is refused.
	MaxReportPods       = 1000
	MaxReportContainers = 64
	// DefaultStale is the age past which a node's latest report is no
	// longer served as metrics.
	DefaultStale = 2 * time.Minute
	// forgetAfter drops a node that has not reported for an hour.
	forgetAfter = time.Hour
	// sweepEvery is how often Add looks for nodes to forget: a look
	// walks every node, and Add runs for every agent every 20 s.
	sweepEvery = time.Minute
)

// Rate is CPU in milli-cores (averaged over Window) and memory working
// set and RSS in bytes, at Time.
type Rate struct {
	Time     time.Time     `json:"time"`
	Window   time.Duration `json:"-"`
	CPUMilli int64         `json:"cpuMilli"`
	CPUNanos uint64        `json:"-"` // nano-cores, for metrics.k8s.io
	Memory   uint64        `json:"memoryBytes"`
	RSS      uint64        `json:"rssBytes,omitempty"`
}

// PodRate is a pod's Rate and its containers'.
type PodRate struct {
	Namespace, Name, UID string
	Rate
	Network    *api.NetworkUsage
	Containers []ContainerRate
}

// ContainerRate is a container's Rate.
type ContainerRate struct {
	Name string
	Rate
}

// Measured keeps what agents measured: per node the last two reports (a
// CPU rate needs two; the pods' latest rates come from them) and a
// bounded history of the node's rate, for the dashboard's chart. It lives
// in memory only and writes nothing to the store. Its methods are safe
// for concurrent use.
//
// Memory is per node, so it is paid by every agent of a fleet: the
// history is a ring of 16-byte points (an hour is 3.75 KiB a node), and
// pods keep no history, as nothing serves one.
type Measured struct {
	keep int

	mu        sync.Mutex
	nodes     map[string]*nodeMeasure
	lastSweep time.Time // of the look for nodes to forget
}

type nodeMeasure struct {
	received time.Time // server clock
	prev     *api.UsageReport
	cur      api.UsageReport
	history  ring // of the node's rate
}

// point is one history entry: what the chart shows of a Rate.
type point struct {
	unix     uint32 // seconds (good until 2106)
	cpuMilli uint32
	memory   uint64 // working set, bytes
}

func pointOf(r Rate) point {
	return point{unix: uint32(max(r.Time.Unix(), 0)), cpuMilli: uint32(min(max(r.CPUMilli, 0), 1<<32-1)), memory: r.Memory}
}

func (p point) rate() Rate {
	return Rate{Time: time.Unix(int64(p.unix), 0).UTC(), CPUMilli: int64(p.cpuMilli), Memory: p.memory}
}

// ring holds the latest points up to a capacity, growing to it as points
// come (a node that reports for a minute holds a few, not an hour's).
type ring struct {
	pts   []point
	start int // index of the oldest once full
}

func (r *ring) add(p point, keep int) {
	if len(r.pts) < keep {
		r.pts = append(r.pts, p)
		return
	}
	r.pts[r.start] = p
	r.start = (r.start + 1) % len(r.pts)
}

// rates returns the points as Rates, oldest first.
func (r *ring) rates() []Rate {
	out := make([]Rate, 0, len(r.pts))
	for i := range r.pts {
		out = append(out, r.pts[(r.start+i)%len(r.pts)].rate())
	}
	return out
}

// NewMeasured returns an empty Measured keeping keep points of history
// (0: DefaultMeasuredKeep).
func NewMeasured(keep int) *Measured {
	if keep <= 0 {
		keep = DefaultMeasuredKeep
	}
	return &Measured{keep: keep, nodes: map[string]*nodeMeasure{}}
}

// ValidateReport checks rep's bounds and names; the error names the field.
func ValidateReport(rep *api.UsageReport) error {
	if rep.Time.IsZero() {
		return errors.New("time: required")
	}
	if len(rep.Pods) > MaxReportPods {
		return fmt.Errorf("pods: %d pods, at most %d", len(rep.Pods), MaxReportPods)
	}
	for i, p := range rep.Pods {
		if p.UID == "" || p.Name == "" || p.Namespace == "" {
			return fmt.Errorf("pods[%d]: namespace, name and uid are required", i)
		}
		if len(p.Containers) > MaxReportContainers {
			return fmt.Errorf("pods[%d].containers: %d containers, at most %d", i, len(p.Containers), MaxReportContainers)
		}
		for j, c := range p.Containers {
			if c.Name == "" {
				return fmt.Errorf("pods[%d].containers[%d].name: required", i, j)
			}
		}
	}
	return nil
}

// Add records node's report, received at now. A report no newer than
// the last one is ignored (a retry, or a clock step back).
func (m *Measured) Add(node string, rep api.UsageReport, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.lastSweep) >= sweepEvery || now.Before(m.lastSweep) {
		m.lastSweep = now
		for n, old := range m.nodes {
			if now.Sub(old.received) > forgetAfter {
				delete(m.nodes, n) // deleted or long gone: bounded by the fleet
			}
		}
	}
	nm := m.nodes[node]
	if nm == nil {
		nm = &nodeMeasure{}
		m.nodes[node] = nm
	} else if !rep.Time.After(nm.cur.Time) {
		return
	}
	if !nm.cur.Time.IsZero() {
		prev := nm.cur
		nm.prev = &prev
	}
	nm.cur, nm.received = rep, now
	if nm.prev == nil {
		return
	}
	if r, ok := nodeRate(*nm.prev, nm.cur); ok {
		nm.history.add(pointOf(r), m.keep)
	}
}

// Forget drops a node's reports (the node was deleted).
func (m *Measured) Forget(node string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.nodes, node)
}

// Node returns the node's latest rate, if it has sent two reports and
// the last was received within stale of now.
func (m *Measured) Node(node string, now time.Time, stale time.Duration) (Rate, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nm := m.fresh(node, now, stale)
	if nm == nil {
		return Rate{}, false
	}
	return nodeRate(*nm.prev, nm.cur)
}

// Nodes lists the nodes with reports, sorted.
func (m *Measured) Nodes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.nodes))
	for n := range m.nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Pods returns the latest rates of the pods on node (see Node).
func (m *Measured) Pods(node string, now time.Time, stale time.Duration) []PodRate {
	m.mu.Lock()
	defer m.mu.Unlock()
	nm := m.fresh(node, now, stale)
	if nm == nil {
		return nil
	}
	return podRates(*nm.prev, nm.cur)
}

// History returns the node's rate history, oldest first: Time (to the
// second), CPUMilli and Memory of each point.
func (m *Measured) History(node string) []Rate {
	m.mu.Lock()
	defer m.mu.Unlock()
	nm := m.nodes[node]
	if nm == nil {
		return nil
	}
	return nm.history.rates()
}

// Latest returns the node's last report as received.
func (m *Measured) Latest(node string) (api.UsageReport, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nm := m.nodes[node]
	if nm == nil {
		return api.UsageReport{}, false
	}
	return nm.cur, true
}

func (m *Measured) fresh(node string, now time.Time, stale time.Duration) *nodeMeasure {
	nm := m.nodes[node]
	if nm == nil || nm.prev == nil || now.Sub(nm.received) > stale {
		return nil
	}
	return nm
}

// rate is the CPU rate between two cumulative readings; ok is false when
// the counter went back (a restarted cgroup) or no time passed.
func rate(prevNanos, curNanos uint64, window time.Duration) (milli int64, nanoCores uint64, ok bool) {
	if window <= 0 || curNanos < prevNanos {
		return 0, 0, false
	}
	d := float64(curNanos-prevNanos) / window.Seconds() // CPU-ns per second = nano-cores
	return int64(d / 1e6), uint64(d), true
}

func nodeRate(prev, cur api.UsageReport) (Rate, bool) {
	w := cur.Time.Sub(prev.Time)
	milli, nc, ok := rate(prev.Node.CPUUsageNanos, cur.Node.CPUUsageNanos, w)
	if !ok {
		return Rate{}, false
	}
	return Rate{Time: cur.Time, Window: w, CPUMilli: milli, CPUNanos: nc, Memory: cur.Node.MemoryWorkingSet}, true
}

// podRates pairs cur's pods and containers with prev's by UID and name;
// those new since prev have no rate yet and are left out.
func podRates(prev, cur api.UsageReport) []PodRate {
	w := cur.Time.Sub(prev.Time)
	before := make(map[string]*api.PodUsage, len(prev.Pods))
	for i := range prev.Pods {
		before[prev.Pods[i].UID] = &prev.Pods[i]
	}
	var out []PodRate
	for _, p := range cur.Pods {
		b := before[p.UID]
		if b == nil {
			continue
		}
		milli, nc, ok := rate(b.CPUUsageNanos, p.CPUUsageNanos, w)
		if !ok {
			continue
		}
		pr := PodRate{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Network: p.Network,
			Rate: Rate{Time: cur.Time, Window: w, CPUMilli: milli, CPUNanos: nc, Memory: p.MemoryWorkingSet, RSS: p.MemoryRSS}}
		for _, c := range p.Containers {
			for _, bc := range b.Containers {
				if bc.Name != c.Name {
					continue
				}
				if milli, nc, ok := rate(bc.CPUUsageNanos, c.CPUUsageNanos, w); ok {
					pr.Containers = append(pr.Containers, ContainerRate{Name: c.Name,
						Rate: Rate{Time: cur.Time, Window: w, CPUMilli: milli, CPUNanos: nc, Memory: c.MemoryWorkingSet, RSS: c.MemoryRSS}})
				}
			}
		}
		out = append(out, pr)
	}
	return out
}
