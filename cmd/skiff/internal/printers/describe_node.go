package printers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api"
)

func (d *describer) node(n *api.Node, pods []api.Pod, withPods bool) {
	d.line(0, "Name:\t%s", n.Name)
	d.line(0, "Roles:\t%s", orNone(strings.Join(nodeRoles(n), ",")))
	d.labels(0, "Labels", n.Labels)
	d.annotations(0, n.Annotations)
	d.line(0, "CreationTimestamp:\t%s", d.stamp(n.CreationTimestamp.Time))
	d.multiline(0, "Taints", taintStrings(n.Spec.Taints))
	d.line(0, "Unschedulable:\t%t", n.Spec.Unschedulable)

	if len(n.Status.Conditions) == 0 {
		d.line(0, "Conditions:\t<none>")
	} else {
		d.line(0, "Conditions:")
		d.line(1, "Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage")
		d.line(1, "----\t------\t-----------------\t------------------\t------\t-------")
		for _, c := range n.Status.Conditions {
			d.line(1, "%s\t%s\t%s\t%s\t%s\t%s", c.Type, c.Status,
				d.stamp(c.LastHeartbeatTime.Time), d.stamp(c.LastTransitionTime.Time), c.Reason, c.Message)
		}
	}
	if len(n.Status.Addresses) == 0 {
		d.line(0, "Addresses:\t<none>")
	} else {
		d.line(0, "Addresses:")
		for _, a := range n.Status.Addresses {
			d.line(1, "%s:\t%s", a.Type, a.Address)
		}
	}
	if len(n.Status.Capacity) > 0 {
		d.line(0, "Capacity:")
		d.resourceList(1, n.Status.Capacity)
	}
	if len(n.Status.Allocatable) > 0 {
		d.line(0, "Allocatable:")
		d.resourceList(1, n.Status.Allocatable)
	}
	info := n.Status.NodeInfo
	d.line(0, "System Info:")
	d.line(1, "Machine ID:\t%s", info.MachineID)
	d.line(1, "Boot ID:\t%s", info.BootID)
	d.line(1, "Kernel Version:\t%s", info.KernelVersion)
	d.line(1, "OS Image:\t%s", info.OSImage)
	d.line(1, "Operating System:\t%s", info.OperatingSystem)
	d.line(1, "Architecture:\t%s", info.Architecture)
	d.line(1, "Container Runtime Version:\t%s", info.ContainerRuntimeVersion)
	d.line(1, "Kubelet Version:\t%s", info.KubeletVersion)
	if n.Spec.PodCIDR != "" {
		d.line(0, "PodCIDR:\t%s", n.Spec.PodCIDR)
	}
	if len(n.Spec.PodCIDRs) > 0 {
		d.line(0, "PodCIDRs:\t%s", strings.Join(n.Spec.PodCIDRs, ","))
	}
	if withPods {
		d.nodePods(n, pods)
	}
}

// taintStrings renders "key=value:Effect" per taint.
func taintStrings(taints []api.Taint) []string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		out = append(out, s+":"+t.Effect)
	}
	return out
}

// nodePods writes the non-terminated pods table and the allocated
// resources summary of kubectl describe node.
func (d *describer) nodePods(n *api.Node, pods []api.Pod) {
	var running []*api.Pod
	for i := range pods {
		if ph := pods[i].Status.Phase; ph != api.PodSucceeded && ph != api.PodFailed {
			running = append(running, &pods[i])
		}
	}
	slices.SortFunc(running, func(a, b *api.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	alloc := n.Status.Allocatable
	if alloc == nil {
		alloc = n.Status.Capacity
	}
	d.line(0, "Non-terminated Pods:\t(%d in total)", len(running))
	totalReq, totalLim := api.ResourceList{}, api.ResourceList{}
	if len(running) > 0 {
		d.line(1, "Namespace\tName\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge")
		d.line(1, "---------\t----\t------------\t----------\t---------------\t-------------\t---")
	}
	for _, p := range running {
		req, lim := podRequestsAndLimits(p)
		addInto(totalReq, req)
		addInto(totalLim, lim)
		d.line(1, "%s\t%s\t%s\t%s\t%s\t%s\t%s", p.Namespace, p.Name,
			share(req, alloc, api.ResourceCPU), share(lim, alloc, api.ResourceCPU),
			share(req, alloc, api.ResourceMemory), share(lim, alloc, api.ResourceMemory),
			age(p.CreationTimestamp.Time, d.now))
	}
	d.line(0, "Allocated resources:")
	d.line(1, "(Total limits may be over 100 percent, i.e., overcommitted.)")
	d.line(1, "Resource\tRequests\tLimits")
	d.line(1, "--------\t--------\t------")
	for _, r := range []api.ResourceName{api.ResourceCPU, api.ResourceMemory} {
		d.line(1, "%s\t%s\t%s", r, share(totalReq, alloc, r), share(totalLim, alloc, r))
	}
}

// podRequestsAndLimits is what a pod asks of a node: the sum over its
// containers, raised per resource to any single init container's value
// (init containers run one at a time, before the others).
func podRequestsAndLimits(p *api.Pod) (reqs, limits api.ResourceList) {
	reqs, limits = api.ResourceList{}, api.ResourceList{}
	for _, c := range p.Spec.Containers {
		addInto(reqs, c.Resources.Requests)
		addInto(limits, c.Resources.Limits)
	}
	for _, c := range p.Spec.InitContainers {
		maxInto(reqs, c.Resources.Requests)
		maxInto(limits, c.Resources.Limits)
	}
	return reqs, limits
}

func addInto(dst, src api.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

func maxInto(dst, src api.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q
		}
	}
}

// share renders "350m (8%)": the amount of r in rl and its share of the
// node's allocatable, truncated to a whole percent as kubectl does.
func share(rl, alloc api.ResourceList, r api.ResourceName) string {
	q := rl[r]
	a := alloc[r]
	pct := int64(0)
	if !a.IsZero() {
		if r == api.ResourceCPU {
			pct = int64(float64(q.MilliValue()) / float64(a.MilliValue()) * 100)
		} else {
			pct = int64(float64(q.Value()) / float64(a.Value()) * 100)
		}
	}
	return fmt.Sprintf("%s (%d%%)", q.String(), pct)
}
