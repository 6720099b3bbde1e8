package apiserver

import (
	"context"
	"errors"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// This file pins a new pod to the node that holds its data: a pod that
// mounts a claim bound to a local volume pinned to a node (the
// local-path provisioner's volumes) gets a required node affinity for
// that node on create, so the scheduler places it there, as Kubernetes'
// volume binding does. A claim not bound yet adds nothing: the volume is
// made on whichever node the first pod lands on.

// labelHostname is the node label a volume's node affinity names.
const labelHostname = "kubernetes.io/hostname"

// pinToVolumeNodes adds the node affinity of pod's bound claims' volumes.
func (s *Server) pinToVolumeNodes(ctx context.Context, pod *api.Pod) error {
	if pod.Spec.NodeName != "" {
		return nil
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		obj, err := s.store.Get(ctx, "persistentvolumeclaims", pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		name := obj.(*api.PersistentVolumeClaim).Spec.VolumeName
		if name == "" {
			continue
		}
		obj, err = s.store.Get(ctx, "persistentvolumes", "", name)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if node := volumeNode(obj.(*api.PersistentVolume)); node != "" {
			addRequiredHostname(pod, node)
		}
	}
	return nil
}

// volumeNode returns the node a volume's node affinity pins it to.
func volumeNode(pv *api.PersistentVolume) string {
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil {
		return ""
	}
	for _, t := range na.Required.NodeSelectorTerms {
		for _, r := range t.MatchExpressions {
			if r.Key == labelHostname && r.Operator == "In" && len(r.Values) == 1 {
				return r.Values[0]
			}
		}
	}
	return ""
}

// addRequiredHostname ANDs "hostname In [node]" into every required
// node-affinity term of pod (adding one when there is none), unless a
// term already says exactly that.
func addRequiredHostname(pod *api.Pod, node string) {
	req := api.NodeSelectorRequirement{Key: labelHostname, Operator: "In", Values: []string{node}}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &api.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &api.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &api.NodeSelector{NodeSelectorTerms: []api.NodeSelectorTerm{{MatchExpressions: []api.NodeSelectorRequirement{req}}}}
		return
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		has := false
		for _, r := range terms[i].MatchExpressions {
			has = has || (r.Key == labelHostname && r.Operator == "In" && len(r.Values) == 1 && r.Values[0] == node)
		}
		if !has {
			terms[i].MatchExpressions = append(terms[i].MatchExpressions, req)
		}
	}
}
