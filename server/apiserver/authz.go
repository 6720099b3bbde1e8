package apiserver

import (
	"net/http"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
)

// Verbs of Attributes, as in Kubernetes RBAC (and auth.Verb).
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbWatch  = "watch"
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbPatch  = "patch"
	VerbDelete = "delete"
)

// Attributes describe a resource request for authorization: what
// ServeResource parsed from the method and URL, before it reads the body
// or touches the store.
type Attributes struct {
	// Verb is one of the Verb constants, or the lower-case HTTP method for
	// a method the API does not serve (which is then refused with 405).
	Verb string
	// APIGroup is the resource's group ("" for core, "apps").
	APIGroup string
	// Resource is the plural resource name ("pods", "nodes", …).
	Resource string
	// Subresource is "status", "log", "exec", "attach", "portforward",
	// … or "". The streaming ones (exec, attach, portforward) always
	// have the verb "create", whether the request is a GET (WebSocket)
	// or a POST (SPDY), as in Kubernetes 1.30+.
	Subresource string
	// Namespace is "" for cluster-scoped resources and all-namespace
	// lists.
	Namespace string
	// Name is the object's name from the URL; "" for list, watch and
	// create (a create's name is in its body, which the hook may read).
	Name string
	// FieldSelector holds the equality terms (field=value) of the
	// fieldSelector query parameter; other operators are left out. When a
	// field has several equality terms the last one is kept (all of them
	// must hold, so the list can only shrink). Nil when there are none or
	// the selector does not parse (the handler then answers 400).
	FieldSelector map[string]string
}

// AuthorizeFunc decides whether the request r, described by a, may
// proceed. It returns nil to allow it, or an error (ideally an
// *api.StatusError, such as a 403 Forbidden) that ServeResource answers
// with instead of serving the request. It runs on the request's goroutine
// before the body is read; it may read r.Body only if it puts back an
// equivalent reader.
type AuthorizeFunc func(r *http.Request, a Attributes) error

// AdmitFunc checks a write that authorization allowed against the object
// it would store: obj is the new object, old the stored one (nil for a
// create). It returns nil to let the write proceed or an error (ideally an
// *api.StatusError) that fails it unchanged. It may run more than once for
// one request (an update retried after a conflict) and must not modify
// obj or old.
type AdmitFunc func(r *http.Request, a Attributes, obj, old api.Object) error

// admitWrite runs the configured admission hook, if any.
func (s *Server) admitWrite(r *http.Request, rt route, obj, old api.Object) error {
	if s.admit == nil {
		return nil
	}
	return s.admit(r, attributes(r, rt), obj, old)
}

// attributes returns the Attributes of a request on rt.
func attributes(r *http.Request, rt route) Attributes {
	a := Attributes{
		Verb:        verbOf(r, rt),
		APIGroup:    rt.res.Group,
		Resource:    rt.res.Resource,
		Subresource: rt.sub,
		Namespace:   rt.namespace,
		Name:        rt.name,
	}
	if fs := r.URL.Query().Get("fieldSelector"); fs != "" {
		a.FieldSelector = equalityTerms(fs)
	}
	return a
}

// verbOf maps the method (and for GET, the shape of the URL) to a verb.
func verbOf(r *http.Request, rt route) string {
	if isStreamSub(rt.sub) {
		return VerbCreate
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case rt.name != "":
			return VerbGet
		case rt.watch || isTrue(r.URL.Query().Get("watch")):
			return VerbWatch
		default:
			return VerbList
		}
	case http.MethodPost:
		return VerbCreate
	case http.MethodPut:
		return VerbUpdate
	case http.MethodPatch:
		return VerbPatch
	case http.MethodDelete:
		return VerbDelete
	}
	return strings.ToLower(r.Method)
}

// equalityTerms returns the field=value terms of a field selector, or nil
// when it does not parse.
func equalityTerms(selector string) map[string]string {
	sel, err := fields.Parse(selector)
	if err != nil {
		return nil
	}
	var out map[string]string
	for _, req := range sel.Requirements() {
		if req.Operator != fields.Equals {
			continue
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[req.Field] = req.Value
	}
	return out
}

// authorize runs the configured hook, if any, and answers a refusal. It
// reports whether the request may proceed.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, rt route) bool {
	if s.authz == nil {
		return true
	}
	if err := s.authz(r, attributes(r, rt)); err != nil {
		s.writeError(w, r, err, rt.res, rt.name)
		return false
	}
	return true
}
