package auth

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/skiffhq/skiff/api"
)

// Mirror pods and self-labels: what a node may write, judged on the final
// object, as Kubernetes' NodeRestriction admission plugin does.

// mirrorVolumeSources are the volume sources a mirror pod may use: the
// ones that read nothing from the API. Any other source, including ones
// added to api.VolumeSource later (claims, projected tokens), is refused.
var mirrorVolumeSources = map[string]bool{"hostPath": true, "emptyDir": true}

// MirrorPodReferences lists, as field paths, every reference a pod makes
// to an API object its node could then read: secrets, configmaps,
// service accounts (and so their tokens), persistent volume claims, and
// any volume source but hostPath and emptyDir. A node may create its
// mirror pods only when this is empty.
func MirrorPodReferences(pod *api.Pod) []string {
	var refs []string
	spec := &pod.Spec
	for i := range spec.Volumes {
		for _, src := range volumeSourceKeys(&spec.Volumes[i].VolumeSource) {
			if !mirrorVolumeSources[src] {
				refs = append(refs, fmt.Sprintf("spec.volumes[%d].%s", i, src))
			}
		}
	}
	for i, ref := range spec.ImagePullSecrets {
		if ref.Name != "" {
			refs = append(refs, fmt.Sprintf("spec.imagePullSecrets[%d]", i))
		}
	}
	if spec.ServiceAccountName != "" {
		refs = append(refs, "spec.serviceAccountName")
	}
	for _, list := range []struct {
		path string
		cs   []api.Container
	}{{"spec.initContainers", spec.InitContainers}, {"spec.containers", spec.Containers}} {
		for i := range list.cs {
			c := &list.cs[i]
			for j := range c.EnvFrom {
				if c.EnvFrom[j].SecretRef != nil || c.EnvFrom[j].ConfigMapRef != nil {
					refs = append(refs, fmt.Sprintf("%s[%d].envFrom[%d]", list.path, i, j))
				}
			}
			for j := range c.Env {
				if vf := c.Env[j].ValueFrom; vf != nil && (vf.SecretKeyRef != nil || vf.ConfigMapKeyRef != nil) {
					refs = append(refs, fmt.Sprintf("%s[%d].env[%d].valueFrom", list.path, i, j))
				}
			}
		}
	}
	return refs
}

// volumeSourceKeys returns the JSON names of the sources set in vs, found
// through its encoding so that sources added later are seen too.
func volumeSourceKeys(vs *api.VolumeSource) []string {
	b, err := json.Marshal(vs)
	if err != nil {
		return []string{"unknown"}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return []string{"unknown"}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// IsAllowedSelfLabel reports whether a node may set, change or remove the
// label key on its own Node; see api.IsNodeSelfLabel.
func IsAllowedSelfLabel(key string) bool { return api.IsNodeSelfLabel(key) }

// ForbiddenSelfLabelChanges lists the label keys that differ between old
// and next (added, changed or removed) that a node may not change on its
// own Node, sorted.
func ForbiddenSelfLabelChanges(old, next map[string]string) []string {
	var out []string
	for k, v := range next {
		if ov, ok := old[k]; (!ok || ov != v) && !IsAllowedSelfLabel(k) {
			out = append(out, k)
		}
	}
	for k := range old {
		if _, ok := next[k]; !ok && !IsAllowedSelfLabel(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
