package scheduler

import (
	"fmt"
	"sort"
	"strings"
)

// ReasonCode names why a node was rejected for a pod.
type ReasonCode uint8

// Reason codes. Their messages are kube-scheduler's.
const (
	ReasonUnschedulable    ReasonCode = iota + 1 // node.spec.unschedulable
	ReasonNotReady                               // Ready condition not True, or heartbeats stopped
	ReasonNodeName                               // spec.nodeName names another node
	ReasonAffinity                               // nodeSelector or required node affinity
	ReasonUntoleratedTaint                       // Key, Value: a NoSchedule/NoExecute taint
	ReasonInsufficient                           // Key: the resource
	ReasonTooManyPods                            // pods allocatable reached
	ReasonPorts                                  // a host port is taken
	ReasonMemoryPressure                         // BestEffort pod on a node under memory pressure
	ReasonDiskPressure
	ReasonPIDPressure
	ReasonSpread      // a DoNotSchedule topology spread constraint's skew
	ReasonSpreadLabel // the node lacks a DoNotSchedule constraint's topology key
)

// Reason is one rejection: a code and its arguments. It is comparable, so
// reasons are counted in maps.
type Reason struct {
	Code  ReasonCode
	Key   string
	Value string
}

// String returns the reason as kube-scheduler words it.
func (r Reason) String() string {
	switch r.Code {
	case ReasonUnschedulable:
		return "node(s) were unschedulable"
	case ReasonNotReady:
		return "node(s) were not ready"
	case ReasonNodeName:
		return "node(s) didn't match the requested node name"
	case ReasonAffinity:
		return "node(s) didn't match Pod's node affinity/selector"
	case ReasonUntoleratedTaint:
		return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", r.Key, r.Value)
	case ReasonInsufficient:
		return "Insufficient " + r.Key
	case ReasonTooManyPods:
		return "Too many pods"
	case ReasonPorts:
		return "node(s) didn't have free ports for the requested pod ports"
	case ReasonMemoryPressure:
		return "node(s) had memory pressure"
	case ReasonDiskPressure:
		return "node(s) had disk pressure"
	case ReasonPIDPressure:
		return "node(s) had pid pressure"
	case ReasonSpread:
		return "node(s) didn't match pod topology spread constraints"
	case ReasonSpreadLabel:
		return "node(s) didn't match pod topology spread constraints (missing required label)"
	}
	return "unknown reason"
}

// resolvable reports whether evicting pods from the node could remove
// the reason (resources, pod count, ports), which makes the node a
// preemption candidate.
func (r Reason) resolvable() bool {
	return r.Code == ReasonInsufficient || r.Code == ReasonTooManyPods || r.Code == ReasonPorts
}

// FitError says that a pod fits on none of the nodes and why, as data:
// how many nodes rejected it for each reason.
type FitError struct {
	Pod      string
	NumNodes int
	Reasons  map[Reason]int
	// Preemption, when set, says what preemption found.
	Preemption string
}

// Error returns the Kubernetes message: "0/5 nodes are available: 3
// Insufficient memory, 2 node(s) had untolerated taint {dedicated: gpu}."
// with the "<count> <reason>" entries sorted as strings, as kube-scheduler
// sorts them.
func (e *FitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "0/%d nodes are available", e.NumNodes)
	if len(e.Reasons) > 0 {
		parts := make([]string, 0, len(e.Reasons))
		for r, n := range e.Reasons {
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
		sort.Strings(parts)
		b.WriteString(": ")
		b.WriteString(strings.Join(parts, ", "))
	}
	b.WriteString(".")
	if e.Preemption != "" {
		b.WriteString(" preemption: ")
		b.WriteString(e.Preemption)
	}
	return b.String()
}
