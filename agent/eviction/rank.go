package eviction

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/api"
	apiresource "github.com/skiffhq/skiff/api/resource"
)

// SystemCriticalPriority is the priority from which a pod counts as
// critical (Kubernetes' system-cluster-critical is 2000000000).
const SystemCriticalPriority = 2000000000

// IsCritical reports whether pod is critical: a static pod (the agent's
// own pod-manifests) or one of system-critical priority. Critical pods
// rank last and are never evicted, as in the kubelet.
func IsCritical(pod *api.Pod) bool {
	return config.IsStaticPod(pod) || priority(pod) >= SystemCriticalPriority
}

func priority(pod *api.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// podRequest sums the pod's app containers' requests of name, or takes
// the largest init container's when that is more, as the kubelet does.
func podRequest(pod *api.Pod, name api.ResourceName) int64 {
	var sum, initMax int64
	val := func(q apiresource.Quantity) int64 {
		if name == api.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Requests[name]; ok {
			sum += val(q)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if q, ok := c.Resources.Requests[name]; ok {
			initMax = max(initMax, val(q))
		}
	}
	return max(sum, initMax)
}

// podUsage is pod's use of r from its stats.
func podUsage(st PodStats, r resource) int64 {
	switch r {
	case resourceMemory:
		return st.MemoryWorkingSet
	case resourceStorage:
		return st.LocalStorage()
	case resourceInodes:
		return st.Inodes
	case resourcePIDs:
		return st.Processes
	}
	return 0
}

// requestOf is pod's request of r (only memory and storage have one).
func requestOf(pod *api.Pod, r resource) int64 {
	switch r {
	case resourceMemory:
		return podRequest(pod, api.ResourceMemory)
	case resourceStorage:
		return podRequest(pod, api.ResourceEphemeralStorage)
	}
	return 0
}

// rankPods orders pods for eviction to reclaim r, first victim first:
//
//   - critical pods last;
//   - memory and storage: pods using more than their request first
//     (pods without stats count as exceeding), then lower priority
//     first, then the larger use above the request first;
//   - inodes and PIDs: lower priority first, then the larger use first.
//
// Ties keep UID order, so a decision can be replayed.
func rankPods(pods []*api.Pod, stats map[string]PodStats, r resource) {
	slices.SortStableFunc(pods, func(a, b *api.Pod) int {
		if ca, cb := IsCritical(a), IsCritical(b); ca != cb {
			if ca {
				return 1
			}
			return -1
		}
		sa, oka := stats[a.UID]
		sb, okb := stats[b.UID]
		above := func(p *api.Pod, st PodStats) int64 { return podUsage(st, r) - requestOf(p, r) }
		if r == resourceMemory || r == resourceStorage {
			ea := !oka || above(a, sa) > 0
			eb := !okb || above(b, sb) > 0
			if ea != eb {
				if ea {
					return -1
				}
				return 1
			}
		}
		if pa, pb := priority(a), priority(b); pa != pb {
			return cmpInt64(int64(pa), int64(pb))
		}
		var ua, ub int64
		if r == resourceMemory || r == resourceStorage {
			ua, ub = above(a, sa), above(b, sb)
		} else {
			ua, ub = podUsage(sa, r), podUsage(sb, r)
		}
		if ua != ub {
			return cmpInt64(ub, ua) // larger first
		}
		return strings.Compare(a.UID, b.UID)
	})
}

// Reasons and messages of evictions, as the kubelet words them.
const (
	ReasonEvicted = "Evicted"
	// ReasonNodePressure is the node event of an eviction.
	ReasonNodePressure = "EvictionThresholdMet"
)

// evictionMessage says why pod is evicted for t: the resource, the
// threshold, what is available and the pod's use.
func evictionMessage(t Threshold, obs observations, pod *api.Pod, st PodStats, hasStats bool) string {
	r := signalResource(t.Signal)
	o := obs[t.Signal]
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %s. Threshold quantity: %s, available: %s. ",
		r, formatAmount(r, t.Value.Resolve(o.capacity)), formatAmount(r, o.available))
	if hasStats {
		fmt.Fprintf(&b, "Pod %s was using %s", pod.Name, formatAmount(r, podUsage(st, r)))
		if r == resourceMemory || r == resourceStorage {
			fmt.Fprintf(&b, ", request is %s", formatAmount(r, requestOf(pod, r)))
		}
		b.WriteString(".")
	}
	return strings.TrimSpace(b.String())
}

// formatAmount renders bytes as binary quantities, counts as numbers.
func formatAmount(r resource, v int64) string {
	if r == resourceMemory || r == resourceStorage {
		return apiresource.NewQuantity(v, apiresource.BinarySI).String()
	}
	return fmt.Sprint(v)
}
