package fleet

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Metrics collects what the simulated agents see: heartbeat round trips
// and when each pod reached its agent. Safe for concurrent use.
type Metrics struct {
	mu        sync.Mutex
	beats     []time.Duration
	delivered map[string]time.Time // ns/name → first arrival at its agent
}

// NewMetrics returns empty Metrics.
func NewMetrics() *Metrics { return &Metrics{delivered: map[string]time.Time{}} }

// Heartbeat records one heartbeat's round trip.
func (m *Metrics) Heartbeat(d time.Duration) {
	m.mu.Lock()
	m.beats = append(m.beats, d)
	m.mu.Unlock()
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

// TakeHeartbeats returns the heartbeat round trips recorded since the
// last call, sorted, and forgets them.
func (m *Metrics) TakeHeartbeats() []time.Duration {
	m.mu.Lock()
	b := m.beats
	m.beats = nil
	m.mu.Unlock()
	slices.Sort(b)
	return b
}

// Percentile is the q-quantile (0..1) of sorted durations.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
