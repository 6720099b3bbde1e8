package auth

import "github.com/skiffhq/skiff/api"

// Names of the default ClusterRoles and their bindings.
const (
	RoleClusterAdmin = "cluster-admin"
	RoleAdmin        = "admin"
	RoleEdit         = "edit"
	RoleView         = "view"
	// RoleDiscovery and RoleBasicUser are bound to every authenticated
	// identity: discovery, OpenAPI, version and health, and the self
	// reviews (kubectl auth can-i and whoami).
	RoleDiscovery = "system:discovery"
	RoleBasicUser = "system:basic-user"
)

// AutoupdateAnnotation set to "false" on a default ClusterRole or binding
// keeps the server from restoring it at start, as in Kubernetes.
const AutoupdateAnnotation = "rbac.authorization.kubernetes.io/autoupdate"

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"create", "delete", "deletecollection", "patch", "update"}
)

func rule(verbs []string, group string, resources ...string) api.PolicyRule {
	return api.PolicyRule{Verbs: verbs, APIGroups: []string{group}, Resources: resources}
}

// viewRules are the view role's: read everything in a namespace but
// secrets (and roles), as Kubernetes' view. Resources skiff does not serve
// yet are listed too, so that they are covered when they come.
func viewRules() []api.PolicyRule {
	return []api.PolicyRule{
		rule(readVerbs, "", "pods", "pods/log", "pods/status", "configmaps", "endpoints", "events",
			"persistentvolumeclaims", "persistentvolumeclaims/status", "replicationcontrollers", "replicationcontrollers/scale",
			"replicationcontrollers/status", "services", "services/status", "serviceaccounts", "namespaces", "namespaces/status",
			"resourcequotas", "resourcequotas/status", "limitranges", "bindings"),
		rule(readVerbs, "apps", "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"replicasets", "replicasets/scale", "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status", "controllerrevisions"),
		rule(readVerbs, "batch", "jobs", "jobs/status", "cronjobs", "cronjobs/status"),
		rule(readVerbs, "autoscaling", "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(readVerbs, "policy", "poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(readVerbs, "discovery.k8s.io", "endpointslices"),
		rule(readVerbs, "networking.k8s.io", "ingresses", "ingresses/status", "networkpolicies"),
		rule(readVerbs, "metrics.k8s.io", "pods", "nodes"),
	}
}

// editRules are view's plus writing workloads, config and secrets, and
// exec, attach and port-forward; not roles or bindings.
func editRules() []api.PolicyRule {
	return append(viewRules(),
		rule(readVerbs, "", "secrets"),
		rule(writeVerbs, "", "pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "pods/eviction",
			"configmaps", "endpoints", "events", "persistentvolumeclaims", "replicationcontrollers", "replicationcontrollers/scale",
			"secrets", "serviceaccounts", "services", "services/proxy"),
		rule([]string{"create"}, "", "serviceaccounts/token"),
		rule([]string{"get", "list", "watch", "create"}, "", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"),
		rule(writeVerbs, "apps", "daemonsets", "deployments", "deployments/rollback", "deployments/scale", "replicasets",
			"replicasets/scale", "statefulsets", "statefulsets/scale"),
		rule(writeVerbs, "batch", "jobs", "cronjobs"),
		rule(writeVerbs, "autoscaling", "horizontalpodautoscalers"),
		rule(writeVerbs, "policy", "poddisruptionbudgets"),
		rule(writeVerbs, "discovery.k8s.io", "endpointslices"),
		rule(writeVerbs, "networking.k8s.io", "ingresses", "networkpolicies"),
	)
}

// adminRules are edit's plus roles and bindings in the namespace.
func adminRules() []api.PolicyRule {
	return append(editRules(),
		rule(append(append([]string{}, readVerbs...), writeVerbs...), api.GroupRBAC, "roles", "rolebindings"),
		rule([]string{"create"}, "authorization.k8s.io", "localsubjectaccessreviews"),
	)
}

// DefaultClusterRoles returns the ClusterRoles the server keeps: the four
// user-facing ones of Kubernetes (cluster-admin, admin, edit, view) and
// the two every authenticated identity is bound to.
func DefaultClusterRoles() []*api.ClusterRole {
	mk := func(name string, rules []api.PolicyRule) *api.ClusterRole {
		cr := &api.ClusterRole{Rules: rules}
		cr.Name = name
		cr.Labels = map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
		cr.Annotations = map[string]string{AutoupdateAnnotation: "true"}
		api.SetTypeMeta(cr)
		return cr
	}
	return []*api.ClusterRole{
		mk(RoleClusterAdmin, []api.PolicyRule{
			{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
		}),
		mk(RoleAdmin, adminRules()),
		mk(RoleEdit, editRules()),
		mk(RoleView, viewRules()),
		mk(RoleDiscovery, []api.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{
			"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/", "/healthz", "/readyz", "/livez",
		}}}),
		mk(RoleBasicUser, []api.PolicyRule{
			rule([]string{"create"}, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule([]string{"create"}, "authentication.k8s.io", "selfsubjectreviews"),
		}),
	}
}

// DefaultClusterRoleBindings returns the bindings the server keeps:
// cluster-admin to system:masters (the admin token), and discovery and
// basic-user to every authenticated identity.
func DefaultClusterRoleBindings() []*api.ClusterRoleBinding {
	mk := func(role, group string) *api.ClusterRoleBinding {
		b := &api.ClusterRoleBinding{
			Subjects: []api.Subject{{Kind: api.SubjectKindGroup, APIGroup: api.GroupRBAC, Name: group}},
			RoleRef:  api.RoleRef{APIGroup: api.GroupRBAC, Kind: "ClusterRole", Name: role},
		}
		b.Name = role
		b.Labels = map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
		b.Annotations = map[string]string{AutoupdateAnnotation: "true"}
		api.SetTypeMeta(b)
		return b
	}
	return []*api.ClusterRoleBinding{
		mk(RoleClusterAdmin, GroupMasters),
		mk(RoleDiscovery, GroupAuthenticated),
		mk(RoleBasicUser, GroupAuthenticated),
	}
}
