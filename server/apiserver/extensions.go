package apiserver

import (
	"net/http"

	"github.com/skiffhq/skiff/api"
)

// ExtraSubresource is a subresource served by a handler outside this
// package (serviceaccounts/token; exec and port-forward may follow). It
// is listed in discovery, parsed like the built-in ones, authorized like
// any request (Attributes.Subresource is its Name), and then handed to
// Serve.
type ExtraSubresource struct {
	// Resource is the plural of the parent ("serviceaccounts"), Name the
	// subresource ("token").
	Resource, Name string
	// Group, Version and Kind are what the subresource takes and returns
	// (authentication.k8s.io, v1, TokenRequest).
	Group, Version, Kind string
	// Verbs are its verbs for discovery ("create").
	Verbs []string
	// Serve answers the request; a is what authorization saw.
	Serve func(w http.ResponseWriter, r *http.Request, a Attributes)
}

// VirtualResource is a resource served outside this package and listed
// in discovery only, like the review kinds (selfsubjectaccessreviews):
// nothing is stored, and ServeResource answers 404 for it.
type VirtualResource struct {
	Info  api.ResourceInfo
	Verbs []string
}

// extraSubresource returns the handler of res's subresource sub, if any.
func (s *Server) extraSubresource(res, sub string) *ExtraSubresource {
	for i := range s.extraSubs {
		if e := &s.extraSubs[i]; e.Resource == res && e.Name == sub {
			return e
		}
	}
	return nil
}
