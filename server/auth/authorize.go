package auth

import (
	"fmt"
	"strconv"
)

// Verb is the action of a request, as in Kubernetes RBAC.
type Verb string

// The verbs the server uses. A GET of a collection is list, and with
// ?watch=true it is watch.
const (
	VerbGet    Verb = "get"
	VerbList   Verb = "list"
	VerbWatch  Verb = "watch"
	VerbCreate Verb = "create"
	VerbUpdate Verb = "update"
	VerbPatch  Verb = "patch"
	VerbDelete Verb = "delete"
)

// Resources and subresources Authorize knows. Any other resource is
// admin-only.
const (
	ResourcePods        = "pods"
	ResourceNodes       = "nodes"
	ResourceSecrets     = "secrets"
	ResourceConfigMaps  = "configmaps"
	ResourceEvents      = "events"
	ResourceNamespaces  = "namespaces"
	ResourceDeployments = "deployments"
	ResourceDaemonSets  = "daemonsets"
	// Services and EndpointSlices feed every node's service proxy and DNS.
	ResourceServices       = "services"
	ResourceEndpointSlices = "endpointslices"
	// ResourceClaims: a node reads the claims its pods mount.
	ResourceClaims = "persistentvolumeclaims"
	// ResourceVolumes: a node reads the volumes pinned to it, and learns
	// that deleted ones are gone (their names are random).
	ResourceVolumes = "persistentvolumes"

	SubresourceStatus = "status"
	SubresourceLog    = "log"
	// The streaming subresources of pods. A node may use none of them,
	// not even on its own pods; RBAC matches each on its own.
	SubresourceExec        = "exec"
	SubresourceAttach      = "attach"
	SubresourcePortForward = "portforward"
)

// Field selector fields Authorize looks at.
const (
	FieldSpecNodeName = "spec.nodeName"
	FieldMetadataName = "metadata.name"
)

// Request is an API request as Authorize sees it: what is asked plus the
// facts about the objects involved that the server looked up. Authorize
// reads only the facts that matter to the identity and verb; the server
// may skip looking up the rest for admins.
type Request struct {
	Verb        Verb
	Resource    string // "pods", "nodes", …
	Subresource string // "status", "log", "exec", "attach", "portforward", … or ""
	Namespace   string // "" for cluster-scoped resources and all-namespace lists
	// Name is the object's name: from the path, or for create from the
	// body. "" for list and watch.
	Name string

	// FieldSelector holds the equality terms (field=value) of a list's or
	// watch's fieldSelector; other operators are left out.
	FieldSelector map[string]string

	// BoundToNode is, for a request on one named pod, the spec.nodeName of
	// the pod as stored (never as in the request body); "" when the pod is
	// unbound or does not exist.
	BoundToNode string
	// IsMirrorForSelf is, for a pod create, whether the body is a mirror
	// pod of the requesting node: spec.nodeName is that node and the
	// skiff.io/mirror annotation is present.
	IsMirrorForSelf bool
	// ReferencedByNodePods is, for a secret or configmap (the named one,
	// or for list and watch the one named by a metadata.name field
	// selector in Namespace), whether a pod bound to the requesting node
	// references it (volume, env, envFrom or imagePullSecrets).
	ReferencedByNodePods bool
	// For a persistentvolume: whether it does not exist, and else the
	// node its node affinity pins it to ("" if none).
	VolumeMissing bool
	VolumeNode    string
}

// Decision is Authorize's answer. Reason says why, in a sentence that
// names the identity; for a denial it becomes the 403 message.
type Decision struct {
	Allowed bool
	Reason  string
}

// Authorize decides whether id may make req. It is a pure function of its
// arguments, safe to call from anywhere.
//
// An admin may do anything; an anonymous identity nothing. A node may:
//   - get, update and patch its own Node and its status, and create its
//     own Node (registration);
//   - get, list and watch every Node, read-only (the pod network's
//     overlay needs every node's podCIDR and address);
//   - get pods (and pods/status) bound to it, list and watch pods only with
//     the field selector spec.nodeName=<itself>, update and patch the
//     status of pods bound to it, delete pods bound to it (confirming a
//     graceful deletion), and create mirror pods of itself;
//   - get secrets and configmaps referenced by pods bound to it, and list
//     or watch one such object by a metadata.name field selector;
//   - create, update and patch events in any namespace;
//   - get namespaces;
//   - get, list and watch Services and EndpointSlices, read-only (its
//     service proxy and cluster DNS serve every Service).
//
// Nothing else: a pod that does not exist counts as not bound to the node,
// so a node cannot probe for other nodes' pods by name.
func Authorize(id Identity, req Request) Decision {
	switch {
	case id.Admin:
		return allow("admin may do anything")
	case id.Node == "":
		return deny("anonymous requests are not allowed")
	}
	n := nodeRequest{node: id.Node, who: id.String(), req: req}
	switch req.Resource {
	case ResourceNodes:
		return n.nodes()
	case ResourcePods:
		return n.pods()
	case ResourceSecrets, ResourceConfigMaps, ResourceClaims:
		return n.referenced()
	case ResourceVolumes:
		if req.Verb == VerbGet && req.Subresource == "" && req.Name != "" && (req.VolumeMissing || req.VolumeNode == id.Node) {
			return allow(n.who + " may get persistentvolumes pinned to it")
		}
	case ResourceEvents:
		if req.Subresource == "" && (req.Verb == VerbCreate || req.Verb == VerbUpdate || req.Verb == VerbPatch) {
			return allow(n.who + " may write events")
		}
	case ResourceNamespaces:
		if req.Subresource == "" && req.Verb == VerbGet {
			return allow(n.who + " may get namespaces")
		}
	case ResourceServices, ResourceEndpointSlices:
		if req.Subresource == "" && (req.Verb == VerbGet || req.Verb == VerbList || req.Verb == VerbWatch) {
			return allow(n.who + " may read " + req.Resource)
		}
	}
	return n.denyDefault()
}

func allow(reason string) Decision { return Decision{Allowed: true, Reason: reason} }

func deny(format string, args ...any) Decision {
	return Decision{Reason: fmt.Sprintf(format, args...)}
}

// nodeRequest is a request by a node identity.
type nodeRequest struct {
	node string
	who  string // `node "<name>"`
	req  Request
}

// what is "<verb> <resource>[/<subresource>]".
func (n nodeRequest) what() string {
	r := n.req.Resource
	if n.req.Subresource != "" {
		r += "/" + n.req.Subresource
	}
	return string(n.req.Verb) + " " + r
}

func (n nodeRequest) denyDefault() Decision {
	return deny("%s may not %s", n.who, n.what())
}

func (n nodeRequest) isList() bool { return n.req.Verb == VerbList || n.req.Verb == VerbWatch }

func (n nodeRequest) nodes() Decision {
	r := n.req
	switch {
	case n.isList():
		if r.Subresource == "" {
			return allow(n.who + " may " + string(r.Verb) + " nodes (read-only, for the pod network)")
		}
		return n.denyDefault()
	case r.Verb == VerbGet && r.Subresource == "":
		return allow(n.who + " may get nodes (read-only, for the pod network)")
	case r.Name != n.node:
		return deny("%s may not %s %q", n.who, n.what(), r.Name)
	case r.Verb == VerbCreate && r.Subresource == "",
		(r.Verb == VerbGet || r.Verb == VerbUpdate || r.Verb == VerbPatch) && (r.Subresource == "" || r.Subresource == SubresourceStatus):
		return allow(n.who + " may " + n.what() + " of itself")
	}
	return n.denyDefault()
}

func (n nodeRequest) pods() Decision {
	r := n.req
	if n.isList() {
		if r.Subresource == "" && r.FieldSelector[FieldSpecNodeName] == n.node {
			return allow(n.who + " may " + string(r.Verb) + " pods bound to it")
		}
		return deny("%s may %s pods only with fieldSelector %s=%s", n.who, r.Verb, FieldSpecNodeName, n.node)
	}
	if r.Verb == VerbCreate {
		if IsStreamSubresource(r.Subresource) {
			return n.denyDefault()
		}
		if r.Subresource == "" && r.IsMirrorForSelf {
			return allow(n.who + " may create its own mirror pods")
		}
		return deny("%s may create only mirror pods bound to itself", n.who)
	}
	var ok bool
	switch r.Verb {
	case VerbGet:
		ok = r.Subresource == "" || r.Subresource == SubresourceStatus
	case VerbUpdate, VerbPatch:
		if r.Subresource == "" {
			return deny("%s may not %s pods, only pods/%s", n.who, r.Verb, SubresourceStatus)
		}
		ok = r.Subresource == SubresourceStatus
	case VerbDelete:
		ok = r.Subresource == ""
	}
	if !ok {
		return n.denyDefault()
	}
	switch r.BoundToNode {
	case n.node:
		return allow(n.who + " may " + n.what() + " bound to it")
	case "":
		return deny("%s may not %s not bound to it", n.who, n.what())
	default:
		return deny("%s may not %s bound to node %s", n.who, n.what(), strconv.Quote(r.BoundToNode))
	}
}

// referenced decides secrets and configmaps.
func (n nodeRequest) referenced() Decision {
	r := n.req
	var ok bool
	switch r.Verb {
	case VerbGet:
		ok = r.Subresource == "" && r.Name != ""
	case VerbList, VerbWatch:
		if r.Subresource != "" || r.Namespace == "" || r.FieldSelector[FieldMetadataName] == "" {
			return deny("%s may %s %s only in one namespace with fieldSelector %s=<name>", n.who, r.Verb, r.Resource, FieldMetadataName)
		}
		ok = true
	}
	if !ok {
		return n.denyDefault()
	}
	if !r.ReferencedByNodePods {
		return deny("%s may not %s not referenced by pods bound to it", n.who, n.what())
	}
	return allow(n.who + " may " + n.what() + " referenced by pods bound to it")
}

// IsStreamSubresource reports whether sub is exec, attach or portforward.
func IsStreamSubresource(sub string) bool {
	return sub == SubresourceExec || sub == SubresourceAttach || sub == SubresourcePortForward
}
