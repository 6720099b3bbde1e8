package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/storage"
)

// Groups of the review kinds and TokenRequest.
const (
	groupAuthorization  = "authorization.k8s.io"
	groupAuthentication = "authentication.k8s.io"
)

// Paths of the self reviews (kubectl auth can-i, kubectl auth whoami).
const (
	selfSubjectAccessReviewPath = "/apis/" + groupAuthorization + "/v1/selfsubjectaccessreviews"
	selfSubjectReviewPath       = "/apis/" + groupAuthentication + "/v1/selfsubjectreviews"
	selfSubjectRulesReviewPath  = "/apis/" + groupAuthorization + "/v1/selfsubjectrulesreviews"
)

// reviewResources lists the review kinds for discovery: create only,
// nothing stored.
func reviewResources() []apiserver.VirtualResource {
	return []apiserver.VirtualResource{
		{Info: api.ResourceInfo{Group: groupAuthorization, Version: "v1", Resource: "selfsubjectaccessreviews", Singular: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview"}, Verbs: []string{"create"}},
		{Info: api.ResourceInfo{Group: groupAuthentication, Version: "v1", Resource: "selfsubjectreviews", Singular: "selfsubjectreview", Kind: "SelfSubjectReview"}, Verbs: []string{"create"}},
		{Info: api.ResourceInfo{Group: groupAuthorization, Version: "v1", Resource: "selfsubjectrulesreviews", Singular: "selfsubjectrulesreview", Kind: "SelfSubjectRulesReview"}, Verbs: []string{"create"}},
	}
}

// readReviewBody reads and strictly decodes a small JSON or YAML body.
func readReviewBody(r *http.Request, into any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10+1))
	if err != nil {
		return api.NewBadRequest("read request body: %v", err)
	}
	if len(b) > 64<<10 {
		return api.NewStatusError(http.StatusRequestEntityTooLarge, api.StatusReasonRequestEntityTooLarge, "the request body is larger than 64 KiB")
	}
	if err := apiserver.DecodeBody(r, b, into); err != nil {
		var se *api.StatusError
		if errors.As(err, &se) {
			return se
		}
		return api.NewBadRequest("%v", err)
	}
	return nil
}

// serveSelfSubjectAccessReview answers whether the caller may make the
// request described in the body.
func (s *server) serveSelfSubjectAccessReview(w http.ResponseWriter, r *http.Request) {
	var rev api.SelfSubjectAccessReview
	if err := readReviewBody(r, &rev); err != nil {
		writeStatus(w, asStatus(err))
		return
	}
	var a auth.Attributes
	switch spec := rev.Spec; {
	case spec.ResourceAttributes != nil:
		ra := spec.ResourceAttributes
		a = auth.Attributes{Verb: ra.Verb, APIGroup: ra.Group, Resource: ra.Resource, Subresource: ra.Subresource, Namespace: ra.Namespace, Name: ra.Name}
		if clusterScoped(ra.Group, ra.Resource) {
			a.Namespace = "" // as a real request on it would be
		}
		if a.APIGroup == "" && a.Resource == "namespaces" && a.Name != "" {
			a.Namespace = a.Name
		}
	case spec.NonResourceAttributes != nil:
		a = auth.Attributes{Verb: spec.NonResourceAttributes.Verb, NonResource: true, Path: spec.NonResourceAttributes.Path}
	default:
		writeStatus(w, api.NewInvalid("SelfSubjectAccessReview", "", api.FieldErrors{api.Required(api.NewPath("spec", "resourceAttributes"), "one of resourceAttributes and nonResourceAttributes is required")}))
		return
	}
	id := identityFrom(r.Context())
	var ok bool
	var reason string
	if id.Node != "" {
		// The node authorizer, without the facts a real request would
		// look up: it answers for what a node may do regardless of them.
		d := auth.Authorize(id, auth.Request{Verb: auth.Verb(a.Verb), Resource: a.Resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name})
		ok, reason = d.Allowed && !a.NonResource, d.Reason
	} else {
		var err error
		if ok, reason, err = s.authorizeUser(r.Context(), id, a); err != nil {
			writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot check permissions right now"))
			return
		}
	}
	rev.Status = api.SubjectAccessReviewStatus{Allowed: ok}
	if ok {
		// As Kubernetes' RBAC, a refusal carries no reason (kubectl
		// prints a bare "no").
		rev.Status.Reason = reason
	}
	rev.TypeMeta = api.TypeMeta{APIVersion: groupAuthorization + "/v1", Kind: "SelfSubjectAccessReview"}
	rev.CreationTimestamp = api.NewTime(s.clk.Now())
	writeJSON(w, http.StatusCreated, &rev)
}

// serveSelfSubjectReview answers who the caller is.
func (s *server) serveSelfSubjectReview(w http.ResponseWriter, r *http.Request) {
	var rev api.SelfSubjectReview
	if err := readReviewBody(r, &rev); err != nil {
		writeStatus(w, asStatus(err))
		return
	}
	rev.TypeMeta = api.TypeMeta{APIVersion: groupAuthentication + "/v1", Kind: "SelfSubjectReview"}
	rev.CreationTimestamp = api.NewTime(s.clk.Now())
	rev.Status.UserInfo = identityFrom(r.Context()).UserInfo()
	writeJSON(w, http.StatusCreated, &rev)
}

// serviceAccountUID returns the uid of a stored service account.
func (s *server) serviceAccountUID(ctx context.Context, namespace, name string) (string, error) {
	obj, err := s.store.Get(ctx, "serviceaccounts", namespace, name)
	if errors.Is(err, storage.ErrNotFound) {
		return "", api.NewNotFound("serviceaccounts", name)
	}
	if err != nil {
		return "", fmt.Errorf("read service account %s/%s: %w", namespace, name, err)
	}
	return obj.GetObjectMeta().UID, nil
}

// tokenRequestSubresource is serviceaccounts/{name}/token: TokenRequest,
// which kubectl create token calls. Authorization has checked "create
// serviceaccounts/token" on the name.
func (s *server) tokenRequestSubresource() apiserver.ExtraSubresource {
	return apiserver.ExtraSubresource{
		Resource: "serviceaccounts", Name: "token",
		Group: groupAuthentication, Version: "v1", Kind: "TokenRequest",
		Verbs: []string{"create"}, Serve: s.serveTokenRequest,
	}
}

func (s *server) serveTokenRequest(w http.ResponseWriter, r *http.Request, a apiserver.Attributes) {
	if r.Method != http.MethodPost {
		writeStatus(w, api.NewStatusError(http.StatusMethodNotAllowed, api.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource"))
		return
	}
	var tr api.TokenRequest
	if err := readReviewBody(r, &tr); err != nil {
		writeStatus(w, asStatus(err))
		return
	}
	ttl := auth.DefaultTokenExpiration
	if es := tr.Spec.ExpirationSeconds; es != nil {
		if d := time.Duration(*es) * time.Second; *es < int64(auth.MinTokenExpiration/time.Second) {
			writeStatus(w, api.NewInvalid("TokenRequest", a.Name, api.FieldErrors{api.Invalid(api.NewPath("spec", "expirationSeconds"), *es, "may not specify a duration less than 10 minutes")}))
			return
		} else {
			ttl = min(d, auth.MaxTokenExpiration)
		}
	}
	uid, err := s.serviceAccountUID(r.Context(), a.Namespace, a.Name)
	if err != nil {
		writeStatus(w, asStatus(err))
		return
	}
	tok, exp, err := s.saTokens.Issue(a.Namespace, a.Name, uid, ttl, tr.Spec.Audiences)
	if err != nil {
		writeStatus(w, asStatus(err))
		return
	}
	secs := int64(ttl / time.Second)
	tr.Spec.ExpirationSeconds = &secs
	tr.TypeMeta = api.TypeMeta{APIVersion: groupAuthentication + "/v1", Kind: "TokenRequest"}
	tr.Name, tr.Namespace = a.Name, a.Namespace
	tr.CreationTimestamp = api.NewTime(s.clk.Now())
	tr.Status = api.TokenRequestStatus{Token: tok, ExpirationTimestamp: api.NewTime(exp)}
	writeJSON(w, http.StatusCreated, &tr)
}

// asStatus returns err as a StatusError: itself when it is one, else a
// 500 that hides the detail.
func asStatus(err error) *api.StatusError {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se
	}
	return api.NewStatusError(http.StatusInternalServerError, api.StatusReasonInternalError, "internal error")
}

// clusterScoped reports a resource skiff serves that is not namespaced.
func clusterScoped(group, resource string) bool {
	for _, r := range api.Resources() {
		if r.Group == group && r.Resource == resource {
			return !r.Namespaced
		}
	}
	return false
}

// serveSelfSubjectRulesReview lists the caller's rules in a namespace
// (kubectl auth can-i --list): the admin's are cluster-admin's, a user's
// come from its bindings, and a node's are not rule-based (incomplete).
func (s *server) serveSelfSubjectRulesReview(w http.ResponseWriter, r *http.Request) {
	var rev api.SelfSubjectRulesReview
	if err := readReviewBody(r, &rev); err != nil {
		writeStatus(w, asStatus(err))
		return
	}
	id := identityFrom(r.Context())
	var rules []api.PolicyRule
	st := api.SubjectRulesReviewStatus{ResourceRules: []api.ResourceRule{}, NonResourceRules: []api.NonResourceRule{}}
	switch {
	case id.Admin:
		rules = auth.DefaultClusterRoles()[0].Rules // cluster-admin
	case id.Node != "":
		st.Incomplete = true
		st.EvaluationError = "a node's permissions come from the node authorizer, not from rules"
	default:
		var err error
		if rules, err = (resolver{cache: s.rbac}).rulesFor(r.Context(), id.UserInfo(), rev.Spec.Namespace); err != nil {
			writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot check permissions right now"))
			return
		}
	}
	for _, pr := range rules {
		if len(pr.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, api.NonResourceRule{Verbs: pr.Verbs, NonResourceURLs: pr.NonResourceURLs})
			continue
		}
		st.ResourceRules = append(st.ResourceRules, api.ResourceRule{Verbs: pr.Verbs, APIGroups: pr.APIGroups, Resources: pr.Resources, ResourceNames: pr.ResourceNames})
	}
	rev.Status = st
	rev.TypeMeta = api.TypeMeta{APIVersion: groupAuthorization + "/v1", Kind: "SelfSubjectRulesReview"}
	rev.CreationTimestamp = api.NewTime(s.clk.Now())
	writeJSON(w, http.StatusCreated, &rev)
}
