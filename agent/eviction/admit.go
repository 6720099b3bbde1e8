package eviction

import (
	"fmt"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// Taint keys of the pressure conditions, as Kubernetes names them.
const (
	TaintMemoryPressure = "node.kubernetes.io/memory-pressure"
	TaintDiskPressure   = "node.kubernetes.io/disk-pressure"
	TaintPIDPressure    = "node.kubernetes.io/pid-pressure"
)

// conditionTaint is the NoSchedule taint key of a pressure condition.
func conditionTaint(c string) string {
	switch c {
	case api.NodeMemoryPressure:
		return TaintMemoryPressure
	case api.NodeDiskPressure:
		return TaintDiskPressure
	}
	return TaintPIDPressure
}

// Admission reasons, as the kubelet reports them.
const (
	ReasonOutOfCPU    = "OutOfcpu"
	ReasonOutOfMemory = "OutOfmemory"
	ReasonOutOfPods   = "OutOfpods"
)

// admitPod decides whether pod may start on a node with the pressure
// conditions conds, the allocatable resources and at most maxPods pods
// (0: no limit), beside others (the pods admitted before and not
// finished). As the kubelet does: the eviction check first — no pod
// under DiskPressure or PIDPressure, no BestEffort pod under
// MemoryPressure unless it tolerates the memory-pressure taint, critical
// pods always — then the resource fit.
func admitPod(pod *api.Pod, others []*api.Pod, conds []string, allocatable api.ResourceList, maxPods int) (ok bool, reason, message string) {
	if len(conds) > 0 && !IsCritical(pod) {
		memOnly := len(conds) == 1 && conds[0] == api.NodeMemoryPressure
		admit := memOnly && (api.QOSClass(pod) != api.PodQOSBestEffort ||
			tolerates(pod.Spec.Tolerations, api.Taint{Key: TaintMemoryPressure, Effect: api.TaintEffectNoSchedule}))
		if !admit {
			return false, ReasonEvicted, fmt.Sprintf("The node had condition: [%s].", strings.Join(conds, ", "))
		}
	}
	if maxPods > 0 && len(others)+1 > maxPods {
		return false, ReasonOutOfPods, fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(others), maxPods)
	}
	for _, r := range []struct {
		name   api.ResourceName
		reason string
	}{{api.ResourceCPU, ReasonOutOfCPU}, {api.ResourceMemory, ReasonOutOfMemory}} {
		q, ok := allocatable[r.name]
		if !ok {
			continue
		}
		capacity := q.Value()
		if r.name == api.ResourceCPU {
			capacity = q.MilliValue()
		}
		want := podRequest(pod, r.name)
		if want == 0 {
			continue
		}
		var used int64
		for _, o := range others {
			used += podRequest(o, r.name)
		}
		if used+want > capacity {
			return false, r.reason, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", r.name, want, used, capacity)
		}
	}
	return true, "", ""
}

// tolerates reports whether one of ts tolerates taint.
func tolerates(ts []api.Toleration, taint api.Taint) bool {
	for _, t := range ts {
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		switch t.Operator {
		case "Exists":
			if t.Key == "" || t.Key == taint.Key {
				return true
			}
		case "", "Equal":
			if t.Key == taint.Key && t.Value == taint.Value {
				return true
			}
		}
	}
	return false
}

// PressureTaintKeys are the taint keys Manager.Taints owns, for
// node.Config.TaintKeys.
func PressureTaintKeys() []string {
	return []string{TaintMemoryPressure, TaintDiskPressure, TaintPIDPressure}
}
