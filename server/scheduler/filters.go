package scheduler

import (
	"time"

	"github.com/skiffhq/skiff/api"
)

// Taints the node lifecycle and eviction admission use; a pod tolerating
// one may go to a node in that state, as in Kubernetes.
const (
	TaintNotReady       = "node.kubernetes.io/not-ready"
	TaintUnschedulable  = "node.kubernetes.io/unschedulable"
	TaintMemoryPressure = "node.kubernetes.io/memory-pressure"
	TaintDiskPressure   = "node.kubernetes.io/disk-pressure"
	TaintPIDPressure    = "node.kubernetes.io/pid-pressure"
)

// Filter is one feasibility check: it appends to out why ni cannot take
// pi (nothing when it can). Filters read pi and ni only and are called
// concurrently for different nodes.
type Filter struct {
	Name  string
	Check func(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason
	// Static filters read only the pod's equivalence class (classKey)
	// and the node's own state (what setNode and Stale set, so a change
	// bumps the node's generation), never the pods on the node: their
	// verdicts are cached per class (equiv.go).
	Static bool
}

// Filters are the feasibility checks, cheapest and most selective first.
// A node is rejected by the first filter that finds a reason.
var Filters = []Filter{
	{"NodeName", filterNodeName, true},
	{"NodeUnschedulable", filterUnschedulable, true},
	{"NodeReady", filterReady, true},
	{"TaintToleration", filterTaints, true},
	{"NodePressure", filterPressure, true},
	{"NodeAffinity", filterAffinity, true},
	{"NodePorts", filterPorts, false},
	{"NodeResourcesFit", filterResources, false},
}

// feasible runs every filter, stopping at the first that rejects.
func feasible(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	return feasibleFrom(0, pi, ni, out)
}

// feasibleFrom runs the filters from index first on.
func feasibleFrom(first int, pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	for i := first; i < len(Filters); i++ {
		if out = Filters[i].Check(pi, ni, out); len(out) > 0 {
			return out
		}
	}
	return out
}

func filterNodeName(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	if n := pi.Pod.Spec.NodeName; n != "" && n != ni.Name {
		out = append(out, Reason{Code: ReasonNodeName})
	}
	return out
}

func filterUnschedulable(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	if ni.Unschedulable && !tolerates(pi.Pod.Spec.Tolerations, &api.Taint{Key: TaintUnschedulable, Effect: api.TaintEffectNoSchedule}) {
		out = append(out, Reason{Code: ReasonUnschedulable})
	}
	return out
}

func filterReady(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	if (!ni.Ready || ni.Stale) && !tolerates(pi.Pod.Spec.Tolerations, &api.Taint{Key: TaintNotReady, Effect: api.TaintEffectNoSchedule}) {
		out = append(out, Reason{Code: ReasonNotReady})
	}
	return out
}

func filterTaints(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	for i := range ni.Taints {
		t := &ni.Taints[i]
		if t.Effect != api.TaintEffectNoSchedule && t.Effect != api.TaintEffectNoExecute {
			continue
		}
		if !tolerates(pi.Pod.Spec.Tolerations, t) {
			return append(out, Reason{Code: ReasonUntoleratedTaint, Key: t.Key, Value: t.Value})
		}
	}
	return out
}

// tolerates reports whether any of ts tolerates taint, with Kubernetes'
// semantics: an empty effect matches every effect; an empty key with
// operator Exists matches every taint; Exists matches any value; Equal
// (or no operator) needs the same value.
func tolerates(ts []api.Toleration, taint *api.Taint) bool {
	for i := range ts {
		t := &ts[i]
		if t.Effect != "" && t.Effect != taint.Effect {
			continue
		}
		if t.Key == "" {
			if t.Operator == api.TolerationOpExists {
				return true
			}
			continue
		}
		if t.Key != taint.Key {
			continue
		}
		switch t.Operator {
		case api.TolerationOpExists:
			return true
		case api.TolerationOpEqual, "":
			if t.Value == taint.Value {
				return true
			}
		}
	}
	return false
}

func filterPressure(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	ts := pi.Pod.Spec.Tolerations
	if ni.MemoryPressure && pi.BestEffort && !tolerates(ts, &api.Taint{Key: TaintMemoryPressure, Effect: api.TaintEffectNoSchedule}) {
		out = append(out, Reason{Code: ReasonMemoryPressure})
	}
	if ni.DiskPressure && !tolerates(ts, &api.Taint{Key: TaintDiskPressure, Effect: api.TaintEffectNoSchedule}) {
		out = append(out, Reason{Code: ReasonDiskPressure})
	}
	if ni.PIDPressure && !tolerates(ts, &api.Taint{Key: TaintPIDPressure, Effect: api.TaintEffectNoSchedule}) {
		out = append(out, Reason{Code: ReasonPIDPressure})
	}
	return out
}

func filterAffinity(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	if !pi.nodeSelector.Empty() && !pi.nodeSelector.Matches(ni.Labels) {
		return append(out, Reason{Code: ReasonAffinity})
	}
	if pi.required == nil {
		return out
	}
	for i := range pi.required {
		if pi.required[i].matches(ni) {
			return out
		}
	}
	return append(out, Reason{Code: ReasonAffinity})
}

func filterPorts(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	for _, want := range pi.HostPorts {
		for _, used := range ni.UsedPorts {
			if want.conflicts(used) {
				return append(out, Reason{Code: ReasonPorts})
			}
		}
	}
	return out
}

func filterResources(pi *PodInfo, ni *NodeInfo, out []Reason) []Reason {
	if ni.PodCount+1 > ni.AllowedPods {
		out = append(out, Reason{Code: ReasonTooManyPods})
	}
	r, req, alloc := pi.Requests, ni.Requested, ni.Allocatable
	if r.MilliCPU > 0 && req.MilliCPU+r.MilliCPU > alloc.MilliCPU {
		out = append(out, Reason{Code: ReasonInsufficient, Key: string(api.ResourceCPU)})
	}
	if r.Memory > 0 && req.Memory+r.Memory > alloc.Memory {
		out = append(out, Reason{Code: ReasonInsufficient, Key: string(api.ResourceMemory)})
	}
	if r.EphemeralStorage > 0 && req.EphemeralStorage+r.EphemeralStorage > alloc.EphemeralStorage {
		out = append(out, Reason{Code: ReasonInsufficient, Key: string(api.ResourceEphemeralStorage)})
	}
	return out
}

// livenessReady turns a node's heartbeats into readiness: a node whose
// last heartbeat is older than grace is not ready. A node never heard
// from since start counts as alive (see apiserver.Liveness).
func livenessReady(last time.Time, known bool, now time.Time, grace time.Duration) bool {
	return !known || now.Sub(last) <= grace
}
