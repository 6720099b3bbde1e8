package api

import "github.com/skiffhq/skiff/api/resource"

// QOSClass returns the quality-of-service class of p, computed exactly as
// the kubelet's qos helper does, from cpu and memory only (other resources
// do not count):
//
//   - BestEffort when no container (init containers included) has a
//     positive cpu or memory request or limit;
//   - Guaranteed when every container has positive cpu and memory limits
//     and, summed over all containers, the requests of each resource equal
//     its limits (an unset request counts as absent, so defaulting requests
//     to limits first, as SetDefaultsPod does, matters);
//   - Burstable otherwise.
//
// QOSClass reads p only; a nil p is BestEffort.
func QOSClass(p *Pod) PodQOSClass {
	if p == nil {
		return PodQOSBestEffort
	}
	requests := map[ResourceName]resource.Quantity{}
	limits := map[ResourceName]resource.Quantity{}
	guaranteed := true
	for _, cs := range [][]Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			addQOSResources(requests, r.Requests)
			found := addQOSResources(limits, r.Limits)
			if !found[ResourceCPU] || !found[ResourceMemory] {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return PodQOSBestEffort
	}
	if guaranteed && len(requests) == len(limits) {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
		if guaranteed {
			return PodQOSGuaranteed
		}
	}
	return PodQOSBurstable
}

// addQOSResources adds the positive cpu and memory quantities of l into
// sum and reports which of the two it found.
func addQOSResources(sum map[ResourceName]resource.Quantity, l ResourceList) map[ResourceName]bool {
	found := map[ResourceName]bool{}
	for _, name := range []ResourceName{ResourceCPU, ResourceMemory} {
		q, ok := l[name]
		if !ok || q.Sign() <= 0 {
			continue
		}
		found[name] = true
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
	return found
}
