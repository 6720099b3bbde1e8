package config

import (
	"encoding/json"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/deepcopy"
)

// Annotations the agent puts on the pods it reads from its sources.
const (
	// ConfigSourceAnnotation names the source of a static pod: SourceFile.
	ConfigSourceAnnotation = "skiff.io/config.source"
	// ConfigHashAnnotation is a static pod's hash: a digest of its file's
	// content, file name and the node name. Its mirror pod carries it as
	// api.MirrorPodAnnotation.
	ConfigHashAnnotation = "skiff.io/config.hash"
)

// IsStaticPod reports whether pod came from a pod-manifests file.
func IsStaticPod(pod *api.Pod) bool {
	return pod != nil && pod.Annotations[ConfigSourceAnnotation] == SourceFile
}

// IsMirrorPod reports whether pod is the API copy of a static pod. Mirror
// pods are never run: their static pod is.
func IsMirrorPod(pod *api.Pod) bool {
	if pod == nil {
		return false
	}
	_, ok := pod.Annotations[api.MirrorPodAnnotation]
	return ok
}

// StaticPodHash returns a static pod's hash ("" for other pods).
func StaticPodHash(pod *api.Pod) string {
	if !IsStaticPod(pod) {
		return ""
	}
	return pod.Annotations[ConfigHashAnnotation]
}

// CopyPod returns a deep copy of pod (nil for nil): nothing reachable
// from it is shared with pod.
func CopyPod(pod *api.Pod) *api.Pod {
	return deepcopy.Of(pod)
}

// copyPods copies every pod of pods.
func copyPods(pods []*api.Pod) []*api.Pod {
	out := make([]*api.Pod, len(pods))
	for i, p := range pods {
		out[i] = CopyPod(p)
	}
	return out
}

// semanticPart is what makes two versions of a pod differ for the agent:
// anything but status and bookkeeping (resourceVersion, generation,
// managed timestamps).
type semanticPart struct {
	Labels                     map[string]string    `json:"labels"`
	Annotations                map[string]string    `json:"annotations"`
	OwnerReferences            []api.OwnerReference `json:"ownerReferences"`
	DeletionTimestamp          *api.Time            `json:"deletionTimestamp"`
	DeletionGracePeriodSeconds *int64               `json:"deletionGracePeriodSeconds"`
	Spec                       api.PodSpec          `json:"spec"`
}

// podsDifferSemantically reports whether a and b differ in more than
// status and bookkeeping, as the kubelet's podsDifferSemantically does.
// Comparing JSON treats nil and empty collections alike.
func podsDifferSemantically(a, b *api.Pod) bool {
	return !jsonEqual(semantic(a), semantic(b))
}

func semantic(p *api.Pod) semanticPart {
	return semanticPart{
		Labels:                     p.Labels,
		Annotations:                p.Annotations,
		OwnerReferences:            p.OwnerReferences,
		DeletionTimestamp:          p.DeletionTimestamp,
		DeletionGracePeriodSeconds: p.DeletionGracePeriodSeconds,
		Spec:                       p.Spec,
	}
}

// jsonEqual reports whether a and b encode to the same JSON. Encoding is
// deterministic (map keys are sorted). Values that cannot be encoded are
// unequal.
func jsonEqual(a, b any) bool {
	ja, err := json.Marshal(a)
	if err != nil {
		return false
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false
	}
	return string(ja) == string(jb)
}
