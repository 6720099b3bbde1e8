package scheduler

import (
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/labels"
)

// defaultMaxPods is the pod capacity assumed for a node that reports none
// (the kubelet's default).
const defaultMaxPods = 110

// NodeInfo is the scheduler's view of one node: what it offers and what
// the pods bound or assumed on it take. It is owned by the Cache; a
// scheduling cycle reads it and must not modify it.
type NodeInfo struct {
	// Node is the node object (shared with the watch, read-only); nil for
	// a node that was deleted, or not seen yet, while pods remain on it.
	Node   *api.Node
	Name   string
	Labels labels.Set

	Allocatable Resources
	AllowedPods int64
	// Requested sums the Requests of the pods on the node; NonZero their
	// NonZero requests (for scoring).
	Requested Resources
	NonZero   Resources
	PodCount  int64
	UsedPorts []HostPort
	// Images maps a normalised image name to its size in bytes.
	Images map[string]int64

	Ready, MemoryPressure, DiskPressure, PIDPressure bool
	Unschedulable                                    bool
	// Stale is set when the node's heartbeats stopped (Config.Liveness):
	// it counts as not ready whatever its stored condition says.
	Stale  bool
	Taints []api.Taint

	// gen changes (to a value unique in the Cache) whenever the state
	// Static filters and scores read changes; 0 outside a Cache.
	gen uint64
	// usage changes (likewise) whenever a pod is placed on or removed
	// from the node.
	usage uint64
	// idx is the node's index in the Cache's Snapshot list.
	idx int

	// Pods are the pods on the node, by key.
	Pods map[string]*PodInfo
	// owners counts the node's pods per controller owner UID.
	owners map[string]int
}

func newNodeInfo(name string) *NodeInfo {
	return &NodeInfo{Name: name, Pods: make(map[string]*PodInfo), owners: make(map[string]int)}
}

// setNode takes n's offer: allocatable (capacity when absent), labels,
// taints, conditions, images.
func (ni *NodeInfo) setNode(n *api.Node) {
	ni.Node = n
	ni.Labels = labels.Set(n.Labels)
	alloc := n.Status.Allocatable
	if len(alloc) == 0 {
		alloc = n.Status.Capacity
	}
	ni.Allocatable = resourcesOf(alloc)
	ni.AllowedPods = defaultMaxPods
	if q, ok := alloc[api.ResourcePods]; ok {
		ni.AllowedPods = q.Value()
	}
	ni.Unschedulable = n.Spec.Unschedulable
	ni.Taints = n.Spec.Taints
	ni.Ready, ni.MemoryPressure, ni.DiskPressure, ni.PIDPressure = false, false, false, false
	for _, c := range n.Status.Conditions {
		on := c.Status == api.ConditionTrue
		switch c.Type {
		case api.NodeReady:
			ni.Ready = on
		case api.NodeMemoryPressure:
			ni.MemoryPressure = on
		case api.NodeDiskPressure:
			ni.DiskPressure = on
		case api.NodePIDPressure:
			ni.PIDPressure = on
		}
	}
	ni.Images = nil
	if len(n.Status.Images) > 0 {
		ni.Images = make(map[string]int64, len(n.Status.Images))
		for _, img := range n.Status.Images {
			for _, name := range img.Names {
				ni.Images[normaliseImage(name)] = img.SizeBytes
			}
		}
	}
}

func (ni *NodeInfo) addPod(pi *PodInfo) {
	ni.Pods[pi.Key] = pi
	ni.Requested.add(pi.Requests)
	ni.NonZero.add(pi.NonZero)
	ni.PodCount++
	ni.UsedPorts = append(ni.UsedPorts, pi.HostPorts...)
	if pi.OwnerUID != "" {
		ni.owners[pi.OwnerUID]++
	}
}

func (ni *NodeInfo) removePod(pi *PodInfo) {
	if _, ok := ni.Pods[pi.Key]; !ok {
		return
	}
	delete(ni.Pods, pi.Key)
	ni.Requested.sub(pi.Requests)
	ni.NonZero.sub(pi.NonZero)
	ni.PodCount--
	ni.UsedPorts = removePorts(ni.UsedPorts, pi.HostPorts)
	if pi.OwnerUID != "" {
		if ni.owners[pi.OwnerUID]--; ni.owners[pi.OwnerUID] <= 0 {
			delete(ni.owners, pi.OwnerUID)
		}
	}
}

// removePorts removes one occurrence of each of del from used.
func removePorts(used, del []HostPort) []HostPort {
	for _, d := range del {
		for i, u := range used {
			if u == d {
				used = append(used[:i], used[i+1:]...)
				break
			}
		}
	}
	return used
}

// without returns a copy of ni's accounting (not its pod map) with
// victims removed, for preemption's what-if checks.
func (ni *NodeInfo) without(victims []*PodInfo) *NodeInfo {
	c := *ni
	c.Pods, c.owners = nil, nil
	c.UsedPorts = append([]HostPort(nil), ni.UsedPorts...)
	for _, v := range victims {
		c.Requested.sub(v.Requests)
		c.NonZero.sub(v.NonZero)
		c.PodCount--
		c.UsedPorts = removePorts(c.UsedPorts, v.HostPorts)
	}
	return &c
}

// with adds pi's accounting to a copy made by without.
func (ni *NodeInfo) with(pi *PodInfo) {
	ni.Requested.add(pi.Requests)
	ni.NonZero.add(pi.NonZero)
	ni.PodCount++
	ni.UsedPorts = append(ni.UsedPorts, pi.HostPorts...)
}
