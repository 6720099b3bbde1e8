package eviction

import (
	"slices"
	"time"

	"github.com/skiffhq/skiff/api"
)

// The helpers below are the steps of the synchronize cycle, pure
// functions of their arguments and now, as in the kubelet's
// eviction/helpers.go.

// thresholdsMet returns the thresholds whose signal's available amount
// is below the threshold's value — below value plus min-reclaim when
// enforceMinReclaim (a threshold met earlier stays met until that much is
// reclaimed). Signals not observed are never met.
func thresholdsMet(ts []Threshold, obs observations, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		limit := t.Value.Resolve(o.capacity)
		if enforceMinReclaim {
			limit += t.MinReclaim.Resolve(o.capacity)
		}
		if o.available < limit {
			out = append(out, t)
		}
	}
	return out
}

// mergeThresholds is the union of a and b, in a's then b's order.
func mergeThresholds(a, b []Threshold) []Threshold {
	out := slices.Clone(a)
	for _, t := range b {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// thresholdsObservedAt records when each threshold was first met.
type thresholdsObservedAt map[Threshold]time.Time

// thresholdsFirstObservedAt keeps the first-observed time of the
// thresholds in ts that were met before and stamps the new ones with
// now; thresholds no longer met are forgotten.
func thresholdsFirstObservedAt(ts []Threshold, last thresholdsObservedAt, now time.Time) thresholdsObservedAt {
	out := thresholdsObservedAt{}
	for _, t := range ts {
		if at, ok := last[t]; ok {
			out[t] = at
		} else {
			out[t] = now
		}
	}
	return out
}

// thresholdsMetGracePeriod returns the thresholds met for at least their
// grace period, in signal order.
func thresholdsMetGracePeriod(at thresholdsObservedAt, now time.Time) []Threshold {
	var out []Threshold
	for t, first := range at {
		if now.Sub(first) >= t.GracePeriod {
			out = append(out, t)
		}
	}
	sortThresholds(out)
	return out
}

// signalCondition is the node condition a signal's pressure sets.
func signalCondition(s Signal) string {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return api.NodeMemoryPressure
	case SignalPIDAvailable:
		return api.NodePIDPressure
	}
	return api.NodeDiskPressure
}

// nodeConditions are the conditions the thresholds set, deduplicated,
// in the order MemoryPressure, DiskPressure, PIDPressure.
func nodeConditions(ts []Threshold) []string {
	set := map[string]bool{}
	for _, t := range ts {
		set[signalCondition(t.Signal)] = true
	}
	var out []string
	for _, c := range conditionTypes {
		if set[c] {
			out = append(out, c)
		}
	}
	return out
}

// conditionTypes are the pressure conditions the manager owns.
var conditionTypes = []string{api.NodeMemoryPressure, api.NodeDiskPressure, api.NodePIDPressure}

// nodeConditionsLastObservedAt stamps conds with now and keeps the last
// time of the conditions not observed now.
func nodeConditionsLastObservedAt(conds []string, last map[string]time.Time, now time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for c, at := range last {
		out[c] = at
	}
	for _, c := range conds {
		out[c] = now
	}
	return out
}

// nodeConditionsObservedSince returns the conditions observed within the
// transition period before now: a condition stays true for period after
// its threshold was last met, so it does not flap.
func nodeConditionsObservedSince(at map[string]time.Time, period time.Duration, now time.Time) []string {
	var out []string
	for _, c := range conditionTypes {
		if t, ok := at[c]; ok && now.Sub(t) < period {
			out = append(out, c)
		}
	}
	return out
}

// thresholdsUpdatedStats keeps the thresholds whose signal was measured
// anew since last: the manager acts only on fresh readings.
func thresholdsUpdatedStats(ts []Threshold, obs, last observations) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		if l, ok := last[t.Signal]; ok && !o.time.After(l.time) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// signalOrder is the eviction priority of a signal: memory first, as in
// the kubelet's byEvictionPriority.
func signalOrder(s Signal) int { return slices.Index(signals, s) }

// sortThresholds orders ts by signal priority, then hard before soft,
// then by value.
func sortThresholds(ts []Threshold) {
	slices.SortStableFunc(ts, func(a, b Threshold) int {
		if d := signalOrder(a.Signal) - signalOrder(b.Signal); d != 0 {
			return d
		}
		if a.Hard != b.Hard {
			if a.Hard {
				return -1
			}
			return 1
		}
		switch {
		case a.Value.Quantity != b.Value.Quantity:
			return cmpInt64(a.Value.Quantity, b.Value.Quantity)
		case a.Value.Percentage < b.Value.Percentage:
			return -1
		case a.Value.Percentage > b.Value.Percentage:
			return 1
		}
		return 0
	})
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// hasCondition reports whether c is in conds.
func hasCondition(conds []string, c string) bool { return slices.Contains(conds, c) }

// resource is what an eviction for a signal reclaims.
type resource string

const (
	resourceMemory  resource = "memory"
	resourceStorage resource = "ephemeral-storage"
	resourceInodes  resource = "inodes"
	resourcePIDs    resource = "pids"
)

func signalResource(s Signal) resource {
	switch s {
	case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
		return resourceMemory
	case SignalNodeFsInodesFree, SignalImageFsInodesFree:
		return resourceInodes
	case SignalPIDAvailable:
		return resourcePIDs
	}
	return resourceStorage
}

// needToReclaim is how much of t's signal must be freed to get back
// above its value plus min-reclaim (0 when it is not met).
func needToReclaim(t Threshold, obs observations) int64 {
	o, ok := obs[t.Signal]
	if !ok {
		return 0
	}
	want := t.Value.Resolve(o.capacity) + t.MinReclaim.Resolve(o.capacity)
	return max(want-o.available, 0)
}
