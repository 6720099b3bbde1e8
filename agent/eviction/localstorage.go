package eviction

import (
	"fmt"

	"github.com/skiffhq/skiff/api"
	apiresource "github.com/skiffhq/skiff/api/resource"
)

// localStorageViolation says why pod breaks a local storage limit, ""
// when it does not: an emptyDir over its sizeLimit, the pod over the sum
// of its containers' ephemeral-storage limits, or a container (writable
// layer and logs) over its own limit — checked in that order, as the
// kubelet's localStorageEviction does.
func localStorageViolation(pod *api.Pod, st PodStats) string {
	for _, v := range pod.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Sign() <= 0 || v.EmptyDir.Medium == "Memory" {
			continue
		}
		if used, ok := st.EmptyDirs[v.Name]; ok && used > v.EmptyDir.SizeLimit.Value() {
			return fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q.", v.Name, v.EmptyDir.SizeLimit.String())
		}
	}
	var podLimit int64
	limited := true
	for _, c := range pod.Spec.Containers {
		q, ok := c.Resources.Limits[api.ResourceEphemeralStorage]
		if !ok {
			limited = false
			continue
		}
		podLimit += q.Value()
	}
	if limited && len(pod.Spec.Containers) > 0 && st.LocalStorage() > podLimit {
		return fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s.",
			apiresource.NewQuantity(podLimit, apiresource.BinarySI))
	}
	for _, c := range pod.Spec.Containers {
		q, ok := c.Resources.Limits[api.ResourceEphemeralStorage]
		if !ok {
			continue
		}
		fs, ok := st.Containers[c.Name]
		if ok && fs.Rootfs+fs.Logs > q.Value() {
			return fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q.", c.Name, q.String())
		}
	}
	return ""
}
