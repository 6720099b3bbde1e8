package client

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/skiffhq/skiff/api"
)

// Namespace values with a special meaning.
const (
	// NamespaceAll, given to List or Watch of a namespaced resource, spans
	// every namespace (/api/v1/pods).
	NamespaceAll = ""
	// NamespaceDefault is used for single-object calls on a namespaced
	// resource (and objects to create) that name no namespace.
	NamespaceDefault = "default"
)

// Subresources of an object.
const (
	subStatus = "status"
	subLog    = "log"
)

// checkResource rejects a ResourceInfo that did not come from api.Resources.
func checkResource(res api.ResourceInfo) error {
	if res.Resource == "" || res.Version == "" || res.New == nil {
		return fmt.Errorf("resource %q is not one skiff serves (use api.LookupResource)", res.Resource)
	}
	return nil
}

// collectionPrefix is "/api/v1" for the core group, "/apis/apps/v1" else.
func collectionPrefix(res api.ResourceInfo) string {
	if res.Group == "" {
		return "/api/" + res.Version
	}
	return "/apis/" + res.Group + "/" + res.Version
}

// collectionPath is the URL path listing res in ns; NamespaceAll (or any
// namespace for a cluster-scoped resource) gives the cluster-wide path.
func collectionPath(res api.ResourceInfo, ns string) string {
	p := collectionPrefix(res)
	if res.Namespaced && ns != NamespaceAll {
		p += "/namespaces/" + url.PathEscape(ns)
	}
	return p + "/" + res.Resource
}

// objectPath is the URL path of one object, or of its subresource when
// sub is not "". An empty ns of a namespaced resource means
// NamespaceDefault; ns is ignored for cluster-scoped resources.
func objectPath(res api.ResourceInfo, ns, name, sub string) (string, error) {
	if err := checkResource(res); err != nil {
		return "", err
	}
	if name == "" {
		return "", fmt.Errorf("%s: a name is required", res.Resource)
	}
	if res.Namespaced && ns == "" {
		ns = NamespaceDefault
	}
	p := collectionPath(res, ns) + "/" + url.PathEscape(name)
	if sub != "" {
		p += "/" + sub
	}
	return p, nil
}

// errNoResource is returned for an object whose Go type is not a skiff kind.
var errNoResource = errors.New("object is not of a kind skiff serves")

// resourceOf returns obj's resource and the namespace its calls go to.
func resourceOf(obj api.Object) (api.ResourceInfo, string, error) {
	if obj == nil {
		return api.ResourceInfo{}, "", errNoResource
	}
	res, ok := api.ResourceOf(obj)
	if !ok {
		return api.ResourceInfo{}, "", fmt.Errorf("%T: %w", obj, errNoResource)
	}
	ns := ""
	if res.Namespaced {
		ns = obj.GetObjectMeta().Namespace
		if ns == "" {
			ns = NamespaceDefault
		}
	}
	return res, ns, nil
}
