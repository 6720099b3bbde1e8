package fleet

import (
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Metrics collects what the simulated agents see: heartbeat round trips
// and when each pod reached its agent. Safe for concurrent use.
type Metrics struct {
	mu        sync.Mutex
	beats     []time.Duration
	slow      []BeatTrace          // heartbeats over SlowBeat, with where their time went
	patches   int                  // of the beats, full node-status patches
	reports   []time.Duration      // usage reports' round trips (they count as heartbeats)
	delivered map[string]time.Time // ns/name → first arrival at its agent
	// from: heartbeats and reports begun before it are not recorded
	// (StartWindow).
	from time.Time
}

// NewMetrics returns empty Metrics.
func NewMetrics() *Metrics { return &Metrics{delivered: map[string]time.Time{}} }

// SlowBeat is the round trip above which a heartbeat's phases are kept.
const SlowBeat = 100 * time.Millisecond

// BeatTrace is where one heartbeat's round trip went, by the client's
// httptrace: waiting for its connection, writing the request, from the
// request written to the answer's first byte (the network and the
// server), and from there until the call returned.
type BeatTrace struct {
	Start                            time.Time // when the call began
	Total, Conn, Write, Answer, Rest time.Duration
	Patch                            bool // a full node-status patch, not the lightweight call
}

// Heartbeat records one heartbeat's round trip and, when it is slow, its
// phases.
func (m *Metrics) Heartbeat(t BeatTrace) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.Start.Before(m.from) {
		return
	}
	m.beats = append(m.beats, t.Total)
	if t.Patch {
		m.patches++
	}
	if t.Total > SlowBeat {
		m.slow = append(m.slow, t)
	}
}

// StartWindow forgets the heartbeats, reports and slow beats recorded so
// far, and records only those that begin at t or later: a call that was
// in flight when the window opened (held up, say, by the simulator's own
// collection just before) belongs to what came before.
func (m *Metrics) StartWindow(t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.beats, m.reports, m.slow, m.patches = nil, nil, nil, 0
	m.from = t
}

// TakeSlowBeats returns the slow heartbeats' traces recorded since the
// last call and how many full status patches were among all beats, and
// forgets them.
func (m *Metrics) TakeSlowBeats() (slow []BeatTrace, patches int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	slow, patches = m.slow, m.patches
	m.slow, m.patches = nil, 0
	return slow, patches
}

// Delivered records that pod key (ns/name) reached its agent at t; only
// the first arrival counts.
func (m *Metrics) Delivered(key string, t time.Time) {
	m.mu.Lock()
	if _, ok := m.delivered[key]; !ok {
		m.delivered[key] = t
	}
	m.mu.Unlock()
}

// DeliveredAt is when pod key reached its agent.
func (m *Metrics) DeliveredAt(key string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.delivered[key]
	return t, ok
}

// CountDelivered is how many of keys have reached their agents.
func (m *Metrics) CountDelivered(keys iter.Seq[string]) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for key := range keys {
		if _, ok := m.delivered[key]; ok {
			n++
		}
	}
	return n
}

// DeliveredWithPrefix is how many pods whose key starts with prefix have
// reached their agents, and when the last of them arrived.
func (m *Metrics) DeliveredWithPrefix(prefix string) (n int, last time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, at := range m.delivered {
		if strings.HasPrefix(key, prefix) {
			n++
			if at.After(last) {
				last = at
			}
		}
	}
	return n, last
}

// DeliveredCount is how many pods have reached their agents.
func (m *Metrics) DeliveredCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.delivered)
}

// Report records the round trip d of a usage report begun at start: the
// server counts a report as a heartbeat, and the agent skips the beat
// that would follow.
func (m *Metrics) Report(start time.Time, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if start.Before(m.from) {
		return
	}
	m.reports = append(m.reports, d)
}

// TakeReports returns the usage reports' round trips recorded since the
// last call, sorted, and forgets them.
func (m *Metrics) TakeReports() []time.Duration { return m.takeSorted(&m.reports) }

// TakeHeartbeats returns the heartbeat round trips recorded since the
// last call, sorted, and forgets them.
func (m *Metrics) TakeHeartbeats() []time.Duration { return m.takeSorted(&m.beats) }

// takeSorted empties *from (under the lock) and returns what it held,
// sorted.
func (m *Metrics) takeSorted(from *[]time.Duration) []time.Duration {
	m.mu.Lock()
	d := *from
	*from = nil
	m.mu.Unlock()
	slices.Sort(d)
	return d
}

// Percentile is the q-quantile (0..1) of sorted durations.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Buckets is one labelled series of a Prometheus histogram: cumulative
// counts by upper bound (le), in the order the exposition gives them.
type Buckets struct {
	Le    []float64
	Count []float64
}

// ParseCounter is the value of the unlabelled series name in the
// Prometheus text exposition text, and whether it was there.
func ParseCounter(text []byte, name string) (float64, bool) {
	for line := range strings.Lines(string(text)) {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// ParseBuckets sums the cumulative bucket counts of family's series whose
// labels contain every one of match (`resource="heartbeat"`, say) in the
// Prometheus text exposition text.
func ParseBuckets(text []byte, family string, match ...string) Buckets {
	var b Buckets
	at := map[float64]int{}
	prefix := family + "_bucket{"
	for line := range strings.Lines(string(text)) {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok || !hasAll(labels, match) {
			continue
		}
		_, le, ok := strings.Cut(labels, `le="`)
		if !ok {
			continue
		}
		le, _, _ = strings.Cut(le, `"`)
		bound, err := strconv.ParseFloat(le, 64)
		n, err2 := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || err2 != nil {
			continue
		}
		i, seen := at[bound]
		if !seen {
			i = len(b.Le)
			at[bound] = i
			b.Le, b.Count = append(b.Le, bound), append(b.Count, 0)
		}
		b.Count[i] += n
	}
	return b
}

// ParseSample sums the values of family's series whose labels contain
// every one of match, in the Prometheus text exposition text (a counter
// or gauge; 0 when none matches).
func ParseSample(text []byte, family string, match ...string) float64 {
	var sum float64
	for line := range strings.Lines(string(text)) {
		rest, ok := strings.CutPrefix(line, family)
		if !ok {
			continue
		}
		var labels, value string
		switch {
		case strings.HasPrefix(rest, "{"):
			labels, value, ok = strings.Cut(rest[1:], "} ")
		case strings.HasPrefix(rest, " "):
			value, ok = rest[1:], true
		default:
			ok = false // another family with this one's name as prefix
		}
		if !ok || !hasAll(labels, match) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
			sum += v
		}
	}
	return sum
}

func hasAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// Since is b minus an earlier reading of the same series.
func (b Buckets) Since(earlier Buckets) Buckets {
	d := Buckets{Le: b.Le, Count: slices.Clone(b.Count)}
	for i := range d.Count {
		if i < len(earlier.Count) {
			d.Count[i] -= earlier.Count[i]
		}
	}
	return d
}

// Total is the number of observations (the +Inf bucket).
func (b Buckets) Total() float64 {
	if len(b.Count) == 0 {
		return 0
	}
	return b.Count[len(b.Count)-1]
}

// Quantile is the upper bound of the bucket that holds quantile q: the
// true quantile is at most this.
func (b Buckets) Quantile(q float64) time.Duration {
	total := b.Total()
	for i, c := range b.Count {
		if c >= q*total {
			if math.IsInf(b.Le[i], 1) {
				return time.Duration(math.MaxInt64)
			}
			return time.Duration(b.Le[i] * float64(time.Second))
		}
	}
	return 0
}

// SlowBeatsSummary says where the slow heartbeats' time went: how many,
// and the p50 and p99 of each phase among them.
func SlowBeatsSummary(slow []BeatTrace, beats, patches int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d heartbeats over %v (%d of all were full status patches, %d of the slow)", len(slow), beats, SlowBeat, patches, countPatches(slow))
	if len(slow) == 0 {
		return b.String()
	}
	for _, ph := range []struct {
		name string
		get  func(BeatTrace) time.Duration
	}{
		{"waiting for the connection", func(t BeatTrace) time.Duration { return t.Conn }},
		{"writing the request", func(t BeatTrace) time.Duration { return t.Write }},
		{"written → first byte of the answer", func(t BeatTrace) time.Duration { return t.Answer }},
		{"first byte → returned", func(t BeatTrace) time.Duration { return t.Rest }},
	} {
		ds := make([]time.Duration, len(slow))
		for i, t := range slow {
			ds[i] = ph.get(t)
		}
		slices.Sort(ds)
		fmt.Fprintf(&b, "; %s p50 %v p99 %v", ph.name, Percentile(ds, 0.5).Round(time.Millisecond), Percentile(ds, 0.99).Round(time.Millisecond))
	}
	return b.String()
}

// SlowBeatSeconds says when the slow heartbeats began: the wall-clock
// seconds with the most of them (at most top), in time order, so they can
// be set beside the server's collector cycles (GODEBUG=gctrace=1) or
// anything else periodic.
func SlowBeatSeconds(slow []BeatTrace, top int) string {
	per := map[int64]int{}
	for _, t := range slow {
		per[t.Start.Unix()]++
	}
	secs := slices.Collect(maps.Keys(per))
	// Most first; of equal counts the earlier.
	slices.SortFunc(secs, func(a, b int64) int {
		if per[a] != per[b] {
			return per[b] - per[a]
		}
		return int(a - b) // seconds apart: no overflow
	})
	secs = secs[:min(top, len(secs))]
	slices.Sort(secs)
	var b strings.Builder
	for i, sec := range secs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s ×%d", time.Unix(sec, 0).Format("15:04:05"), per[sec])
	}
	return b.String()
}

func countPatches(ts []BeatTrace) int {
	n := 0
	for _, t := range ts {
		if t.Patch {
			n++
		}
	}
	return n
}
