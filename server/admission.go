package server

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
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
	if id.Admin {
		return nil
	}
	if id.Node == "" {
		return s.admitEscalation(r, id, obj)
	}
	switch o := obj.(type) {
	case *api.Pod:
		if old == nil {
			return admitNodePod(id, o)
		}
		// Authorization read the pod before the write did: the version
		// written must be bound to this node too, as Kubernetes'
		// NodeRestriction checks the stored pod. A pod deleted and made
		// again on another node in between is not this node's to write.
		if prev, ok := old.(*api.Pod); ok && prev.Spec.NodeName != id.Node {
			return forbidden(fmt.Sprintf("%s may not write pod %s/%s: it is bound to node %q", id.String(), prev.Namespace, prev.Name, prev.Spec.NodeName))
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
// the node could then read through it, or that claims an owner other than
// the node (a controller would count it as its own).
func admitNodePod(id auth.Identity, pod *api.Pod) error {
	if refs := auth.MirrorPodReferences(pod); len(refs) > 0 {
		return forbidden(id.String() + " may not create mirror pods that reference API objects (secrets, configmaps, service accounts, volume claims): " + strings.Join(refs, ", "))
	}
	for i, o := range pod.OwnerReferences {
		if o.Kind != "Node" || o.Name != id.Node || o.APIVersion != "v1" {
			return forbidden(fmt.Sprintf("%s may not create mirror pods owned by anything but its own Node: metadata.ownerReferences[%d] is %s %s", id.String(), i, o.Kind, o.Name))
		}
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

// admitEscalation stops a user from granting more than it has, as
// Kubernetes' RBAC does: a role it writes may hold only rules it has
// itself (in that namespace) unless it may "escalate" roles, and a role it
// binds may hold only such rules unless it may "bind" that role.
func (s *server) admitEscalation(r *http.Request, id auth.Identity, obj api.Object) error {
	ctx := r.Context()
	var rules []api.PolicyRule
	var verb, resource, name, ns string
	switch o := obj.(type) {
	case *api.Role:
		rules, verb, resource, name, ns = o.Rules, "escalate", "roles", o.Name, o.Namespace
	case *api.ClusterRole:
		rules, verb, resource, name = o.Rules, "escalate", "clusterroles", o.Name
	case *api.RoleBinding:
		verb, name, ns = "bind", o.RoleRef.Name, o.Namespace
		resource = "clusterroles"
		if o.RoleRef.Kind == "Role" {
			resource = "roles"
		}
		var err error
		if rules, err = (resolver{cache: s.rbac}).roleRules(ctx, ns, o.RoleRef); err != nil {
			return err
		}
	case *api.ClusterRoleBinding:
		verb, resource, name = "bind", "clusterroles", o.RoleRef.Name
		var err error
		if rules, err = (resolver{cache: s.rbac}).roleRules(ctx, "", o.RoleRef); err != nil {
			return err
		}
	default:
		return nil
	}
	rv := resolver{cache: s.rbac}
	if ok, _, err := rv.allows(ctx, id.UserInfo(), auth.Attributes{Verb: verb, APIGroup: api.GroupRBAC, Resource: resource, Namespace: ns, Name: name}); err != nil || ok {
		return err
	}
	have, err := rv.rulesFor(ctx, id.UserInfo(), ns)
	if err != nil {
		return err
	}
	for _, rule := range rules {
		if !auth.Covers(have, rule) {
			what := "create or update this role"
			if verb == "bind" {
				what = "bind " + resource + " " + strconv.Quote(name)
			}
			return forbidden(fmt.Sprintf("%s may not %s: it would grant %v on %v %v %v that it does not have itself (privilege escalation)",
				id.String(), what, rule.Verbs, rule.APIGroups, rule.Resources, rule.NonResourceURLs))
		}
	}
	return nil
}
