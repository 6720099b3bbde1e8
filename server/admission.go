package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/auth"
)

// admit is the apiserver's Admit hook: it checks a write against the
// object that would be stored. Only node identities are restricted here
// (Kubernetes' NodeRestriction); other identities were judged in full by
// authorization.
func (s *server) admit(r *http.Request, a apiserver.Attributes, obj, old api.Object) error {
	id := identityFrom(r.Context())
	if id.Node == "" || id.Admin {
		return nil
	}
	switch o := obj.(type) {
	case *api.Pod:
		if old == nil {
			return admitNodePod(id, o)
		}
	case *api.Node:
		var prev *api.Node
		if n, ok := old.(*api.Node); ok {
			prev = n
		}
		return admitNodeNode(id, o, prev)
	}
	return nil
}

// admitNodePod refuses a node's mirror pod that references API objects
// the node could then read through it.
func admitNodePod(id auth.Identity, pod *api.Pod) error {
	if refs := auth.MirrorPodReferences(pod); len(refs) > 0 {
		return forbidden(id.String() + " may not create mirror pods that reference API objects (secrets, configmaps, service accounts, volume claims): " + strings.Join(refs, ", "))
	}
	return nil
}

// admitNodeNode limits what a node may write on its own Node: labels in
// the kubernetes.io and k8s.io domains only from the self-label set, and
// never its pod CIDRs, which the server assigns.
func admitNodeNode(id auth.Identity, n, old *api.Node) error {
	var oldLabels map[string]string
	if old != nil {
		oldLabels = old.Labels
	}
	if bad := auth.ForbiddenSelfLabelChanges(oldLabels, n.Labels); len(bad) > 0 {
		return forbidden(id.String() + " may not set, change or remove these labels on its own Node: " + strings.Join(bad, ", "))
	}
	if old == nil {
		if n.Spec.PodCIDR != "" || len(n.Spec.PodCIDRs) > 0 {
			return forbidden(id.String() + " may not choose its own spec.podCIDR; the server assigns it")
		}
		return nil
	}
	if n.Spec.PodCIDR != old.Spec.PodCIDR || !slices.Equal(n.Spec.PodCIDRs, old.Spec.PodCIDRs) {
		return forbidden(id.String() + " may not change its own spec.podCIDR or spec.podCIDRs")
	}
	return nil
}
