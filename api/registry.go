package api

// GroupRBAC is the API group of roles and bindings.
const GroupRBAC = "rbac.authorization.k8s.io"

// ResourceInfo describes one kind of object the API serves: its names for
// URLs and discovery, whether it is namespaced, and how to make an empty one.
type ResourceInfo struct {
	Group      string // "" for core, "apps"
	Version    string // "v1"
	Resource   string // plural, as in URLs: "pods"
	Singular   string // "pod"
	Kind       string // "Pod"
	ShortNames []string
	// Categories are the groups of resources a name like "all" stands for
	// in kubectl (kubectl get all); as in Kubernetes.
	Categories []string
	Namespaced bool
	HasStatus  bool // has a /status subresource
	New        func() Object
}

// GroupVersion returns "v1" for the core group and "group/v1" otherwise,
// as written in apiVersion.
func (r *ResourceInfo) GroupVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// ListKind returns the kind of a list of these objects ("PodList").
func (r *ResourceInfo) ListKind() string { return r.Kind + "List" }

// Resources returns every resource skiff serves, in discovery order. Each
// call returns a fresh slice; callers may keep it.
func Resources() []ResourceInfo {
	return []ResourceInfo{
		{Version: "v1", Resource: "namespaces", Singular: "namespace", Kind: "Namespace", ShortNames: []string{"ns"}, HasStatus: true, New: func() Object { return &Namespace{} }},
		{Version: "v1", Resource: "nodes", Singular: "node", Kind: "Node", ShortNames: []string{"no"}, HasStatus: true, New: func() Object { return &Node{} }},
		{Version: "v1", Resource: "pods", Singular: "pod", Kind: "Pod", ShortNames: []string{"po"}, Categories: []string{"all"}, Namespaced: true, HasStatus: true, New: func() Object { return &Pod{} }},
		{Version: "v1", Resource: "events", Singular: "event", Kind: "Event", ShortNames: []string{"ev"}, Namespaced: true, New: func() Object { return &Event{} }},
		{Version: "v1", Resource: "secrets", Singular: "secret", Kind: "Secret", Namespaced: true, New: func() Object { return &Secret{} }},
		{Version: "v1", Resource: "configmaps", Singular: "configmap", Kind: "ConfigMap", ShortNames: []string{"cm"}, Namespaced: true, New: func() Object { return &ConfigMap{} }},
		{Version: "v1", Resource: "services", Singular: "service", Kind: "Service", ShortNames: []string{"svc"}, Categories: []string{"all"}, Namespaced: true, HasStatus: true, New: func() Object { return &Service{} }},
		{Version: "v1", Resource: "endpoints", Singular: "endpoints", Kind: "Endpoints", ShortNames: []string{"ep"}, Namespaced: true, New: func() Object { return &Endpoints{} }},
		{Group: "apps", Version: "v1", Resource: "deployments", Singular: "deployment", Kind: "Deployment", ShortNames: []string{"deploy"}, Categories: []string{"all"}, Namespaced: true, HasStatus: true, New: func() Object { return &Deployment{} }},
		{Group: "apps", Version: "v1", Resource: "daemonsets", Singular: "daemonset", Kind: "DaemonSet", ShortNames: []string{"ds"}, Categories: []string{"all"}, Namespaced: true, HasStatus: true, New: func() Object { return &DaemonSet{} }},
		{Group: "apps", Version: "v1", Resource: "replicasets", Singular: "replicaset", Kind: "ReplicaSet", ShortNames: []string{"rs"}, Categories: []string{"all"}, Namespaced: true, HasStatus: true, New: func() Object { return &ReplicaSet{} }},
		{Group: "batch", Version: "v1", Resource: "jobs", Singular: "job", Kind: "Job", Categories: []string{"all"}, Namespaced: true, HasStatus: true, New: func() Object { return &Job{} }},
		{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets", Singular: "poddisruptionbudget", Kind: "PodDisruptionBudget", ShortNames: []string{"pdb"}, Namespaced: true, HasStatus: true, New: func() Object { return &PodDisruptionBudget{} }},
		{Group: "apps", Version: "v1", Resource: "statefulsets", Singular: "statefulset", Kind: "StatefulSet", ShortNames: []string{"sts"}, Categories: []string{"all"}, Namespaced: true, HasStatus: true, New: func() Object { return &StatefulSet{} }},
		{Version: "v1", Resource: "persistentvolumeclaims", Singular: "persistentvolumeclaim", Kind: "PersistentVolumeClaim", ShortNames: []string{"pvc"}, Namespaced: true, HasStatus: true, New: func() Object { return &PersistentVolumeClaim{} }},
		{Version: "v1", Resource: "persistentvolumes", Singular: "persistentvolume", Kind: "PersistentVolume", ShortNames: []string{"pv"}, HasStatus: true, New: func() Object { return &PersistentVolume{} }},
		{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses", Singular: "storageclass", Kind: "StorageClass", ShortNames: []string{"sc"}, New: func() Object { return &StorageClass{} }},
		{Group: "batch", Version: "v1", Resource: "cronjobs", Singular: "cronjob", Kind: "CronJob", ShortNames: []string{"cj"}, Categories: []string{"all"}, Namespaced: true, HasStatus: true, New: func() Object { return &CronJob{} }},
		{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Singular: "endpointslice", Kind: "EndpointSlice", Namespaced: true, New: func() Object { return &EndpointSlice{} }},
		{Version: "v1", Resource: "serviceaccounts", Singular: "serviceaccount", Kind: "ServiceAccount", ShortNames: []string{"sa"}, Namespaced: true, New: func() Object { return &ServiceAccount{} }},
		{Group: GroupRBAC, Version: "v1", Resource: "roles", Singular: "role", Kind: "Role", Namespaced: true, New: func() Object { return &Role{} }},
		{Group: GroupRBAC, Version: "v1", Resource: "rolebindings", Singular: "rolebinding", Kind: "RoleBinding", Namespaced: true, New: func() Object { return &RoleBinding{} }},
		{Group: GroupRBAC, Version: "v1", Resource: "clusterroles", Singular: "clusterrole", Kind: "ClusterRole", New: func() Object { return &ClusterRole{} }},
		{Group: GroupRBAC, Version: "v1", Resource: "clusterrolebindings", Singular: "clusterrolebinding", Kind: "ClusterRoleBinding", New: func() Object { return &ClusterRoleBinding{} }},
	}
}

// registry is Resources() built once, for the lookups below (they run on
// every write); it is never handed out, so nobody can change it.
var registry = Resources()

// LookupResource finds a resource by plural, singular or short name, or
// by kind (case-insensitive), as the CLI accepts them.
func LookupResource(name string) (ResourceInfo, bool) {
	for _, r := range registry {
		if equalFold(name, r.Resource) || equalFold(name, r.Singular) || equalFold(name, r.Kind) {
			return r, true
		}
		for _, s := range r.ShortNames {
			if equalFold(name, s) {
				return r, true
			}
		}
	}
	return ResourceInfo{}, false
}

// ResourceForKind finds the resource of apiVersion/kind ("v1", "Pod").
func ResourceForKind(apiVersion, kind string) (ResourceInfo, bool) {
	for _, r := range registry {
		if r.Kind == kind && r.GroupVersion() == apiVersion {
			return r, true
		}
	}
	return ResourceInfo{}, false
}

// ResourceOf returns the resource of obj's Go type.
func ResourceOf(obj Object) (ResourceInfo, bool) {
	var kind string
	switch obj.(type) {
	case *Namespace:
		kind = "Namespace"
	case *Node:
		kind = "Node"
	case *Pod:
		kind = "Pod"
	case *Event:
		kind = "Event"
	case *Secret:
		kind = "Secret"
	case *ConfigMap:
		kind = "ConfigMap"
	case *Deployment:
		kind = "Deployment"
	case *DaemonSet:
		kind = "DaemonSet"
	case *ReplicaSet:
		kind = "ReplicaSet"
	case *Job:
		kind = "Job"
	case *CronJob:
		kind = "CronJob"
	case *Service:
		kind = "Service"
	case *Endpoints:
		kind = "Endpoints"
	case *EndpointSlice:
		kind = "EndpointSlice"
	case *ServiceAccount:
		kind = "ServiceAccount"
	case *Role:
		kind = "Role"
	case *RoleBinding:
		kind = "RoleBinding"
	case *ClusterRole:
		kind = "ClusterRole"
	case *ClusterRoleBinding:
		kind = "ClusterRoleBinding"
	case *PodDisruptionBudget:
		kind = "PodDisruptionBudget"
	case *StatefulSet:
		kind = "StatefulSet"
	case *PersistentVolumeClaim:
		kind = "PersistentVolumeClaim"
	case *PersistentVolume:
		kind = "PersistentVolume"
	case *StorageClass:
		kind = "StorageClass"
	default:
		return ResourceInfo{}, false
	}
	for _, r := range registry {
		if r.Kind == kind {
			return r, true
		}
	}
	return ResourceInfo{}, false
}

// SetTypeMeta fills obj's apiVersion and kind from its Go type.
func SetTypeMeta(obj Object) {
	if r, ok := ResourceOf(obj); ok {
		*obj.GetTypeMeta() = TypeMeta{APIVersion: r.GroupVersion(), Kind: r.Kind}
	}
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		ca, cb := a[i], b[i]
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}
