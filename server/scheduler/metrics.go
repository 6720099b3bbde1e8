package scheduler

import (
	"math"
	"sync/atomic"
	"time"
)

// Metrics are the scheduler's counters, safe to read from any goroutine
// while the scheduler runs. The server publishes them on /metrics.
type Metrics struct {
	// Attempts by result.
	Scheduled, Unschedulable, Errors atomic.Int64
	// BindConflicts counts binds refused by the resourceVersion
	// precondition (the pod is re-queued).
	BindConflicts atomic.Int64
	// BindBatches counts store batches written by binders.
	BindBatches atomic.Int64
	// Preemptions counts preemptions decided; Victims the pods evicted.
	Preemptions, Victims atomic.Int64
	// Relists counts informer relists (after compaction or falling
	// behind); Expired assumed pods never confirmed.
	Relists, Expired atomic.Int64
	// SelfBoundEvents counts pod watch events recognised as this
	// scheduler's own binds and not decoded (selfbind.go).
	SelfBoundEvents atomic.Int64
	// EffectsDropped counts events and status writes dropped because
	// their queue was full.
	EffectsDropped atomic.Int64
	// E2E is the time from a pod entering the queue to its binding being
	// committed; Attempt from the start of its last attempt to the
	// commit.
	E2E, Attempt Histogram

	active, backoff, unschedulable atomic.Int64
}

// QueueLengths returns the pods active, backing off and unschedulable, as
// of the end of the last scheduling cycle.
func (m *Metrics) QueueLengths() (active, backoff, unschedulable int64) {
	return m.active.Load(), m.backoff.Load(), m.unschedulable.Load()
}

func (m *Metrics) setQueue(q *Queue) {
	a, b, u := q.Lens()
	m.active.Store(int64(a))
	m.backoff.Store(int64(b))
	m.unschedulable.Store(int64(u))
}

// Histogram buckets: exponential from 10 µs by a factor of 2^(1/4)
// (about 19%), up to about 30 minutes.
const (
	histBuckets = 112
	histBase    = 10 * time.Microsecond
	histPerOct  = 4
)

// Histogram is a lock-free latency histogram with fine exponential
// buckets, so quantiles are within about 10%.
type Histogram struct {
	counts [histBuckets]atomic.Int64
	count  atomic.Int64
	sumNs  atomic.Int64
}

func bucketOf(d time.Duration) int {
	if d <= histBase {
		return 0
	}
	i := int(math.Ceil(math.Log2(float64(d)/float64(histBase)) * histPerOct))
	return min(i, histBuckets-1)
}

// BucketBound returns the upper bound of bucket i.
func BucketBound(i int) time.Duration {
	return time.Duration(float64(histBase) * math.Exp2(float64(i)/histPerOct))
}

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	h.counts[bucketOf(d)].Add(1)
	h.count.Add(1)
	h.sumNs.Add(int64(d))
}

// Count and Sum return the number and total of observations.
func (h *Histogram) Count() int64       { return h.count.Load() }
func (h *Histogram) Sum() time.Duration { return time.Duration(h.sumNs.Load()) }

// Buckets returns the cumulative count at each bucket's upper bound
// (BucketBound), for Prometheus-style exposition.
func (h *Histogram) Buckets() []int64 {
	out := make([]int64, histBuckets)
	var c int64
	for i := range out {
		c += h.counts[i].Load()
		out[i] = c
	}
	return out
}

// Quantile returns the upper bound of the bucket holding quantile q
// (0 < q ≤ 1), or 0 without observations.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var c int64
	for i := range h.counts {
		if c += h.counts[i].Load(); c >= rank {
			return BucketBound(i)
		}
	}
	return BucketBound(histBuckets - 1)
}
