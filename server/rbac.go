package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/storage"
)

// RBAC: roles and bindings are read from the store on each request by a
// user identity (service accounts). Admins (cluster-admin) and nodes (the
// node authorizer) never get here. Bindings are few on an edge cluster,
// and SQLite reads are cheap; a watch-fed cache can replace this when
// they are not.

// resolver answers RBAC questions over the store.
type resolver struct {
	store *storage.Store
}

// rulesFor returns the rules granted to info in namespace ns (cluster-wide
// ones only when ns is ""), each with the binding that granted it.
func (rv resolver) rulesFor(ctx context.Context, info api.UserInfo, ns string) ([]api.PolicyRule, error) {
	var rules []api.PolicyRule
	crbs, _, err := rv.store.List(ctx, "clusterrolebindings", storage.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("rbac: list cluster role bindings: %w", err)
	}
	for _, o := range crbs {
		b := o.(*api.ClusterRoleBinding)
		if !bindsAny(b.Subjects, info) {
			continue
		}
		r, err := rv.roleRules(ctx, "", b.RoleRef)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r...)
	}
	if ns == "" {
		return rules, nil
	}
	rbs, _, err := rv.store.List(ctx, "rolebindings", storage.ListOptions{Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("rbac: list role bindings: %w", err)
	}
	for _, o := range rbs {
		b := o.(*api.RoleBinding)
		if !bindsAny(b.Subjects, info) {
			continue
		}
		r, err := rv.roleRules(ctx, ns, b.RoleRef)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r...)
	}
	return rules, nil
}

func bindsAny(subjects []api.Subject, info api.UserInfo) bool {
	for _, s := range subjects {
		if auth.SubjectMatches(s, info.Username, info.Groups) {
			return true
		}
	}
	return false
}

// roleRules returns the rules of the role ref names (a Role in ns, or a
// ClusterRole); a missing role grants nothing.
func (rv resolver) roleRules(ctx context.Context, ns string, ref api.RoleRef) ([]api.PolicyRule, error) {
	var obj api.Object
	var err error
	if ref.Kind == "Role" {
		obj, err = rv.store.Get(ctx, "roles", ns, ref.Name)
	} else {
		obj, err = rv.store.Get(ctx, "clusterroles", "", ref.Name)
	}
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rbac: read %s %s: %w", ref.Kind, ref.Name, err)
	}
	switch r := obj.(type) {
	case *api.Role:
		return r.Rules, nil
	case *api.ClusterRole:
		return r.Rules, nil
	}
	return nil, nil
}

// allows reports whether info may do a, and a reason.
func (rv resolver) allows(ctx context.Context, info api.UserInfo, a auth.Attributes) (bool, string, error) {
	rules, err := rv.rulesFor(ctx, info, a.Namespace)
	if err != nil {
		return false, "", err
	}
	if auth.RulesAllow(rules, a) {
		return true, "allowed by RBAC", nil
	}
	return false, describeDenial(info, a), nil
}

// describeDenial words a refusal as Kubernetes does.
func describeDenial(info api.UserInfo, a auth.Attributes) string {
	if a.NonResource {
		return fmt.Sprintf("User %q cannot %s path %q", info.Username, a.Verb, a.Path)
	}
	res := a.Resource
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	if a.APIGroup != "" {
		res += "." + a.APIGroup
	}
	msg := fmt.Sprintf("User %q cannot %s resource %q", info.Username, a.Verb, res)
	if a.Namespace != "" {
		return msg + fmt.Sprintf(" in the namespace %q", a.Namespace)
	}
	return msg + " at the cluster scope"
}

// authorizeUser decides a for an admin (anything) or a user identity
// (RBAC); anonymous and node identities get no RBAC grants (nodes have
// their own authorizer, in authorizeResource).
func (s *server) authorizeUser(ctx context.Context, id auth.Identity, a auth.Attributes) (bool, string, error) {
	switch {
	case id.Admin:
		return true, "admin may do anything", nil
	case id.User == "":
		return false, "anonymous requests are not allowed", nil
	}
	return resolver{store: s.store}.allows(ctx, id.UserInfo(), a)
}

// rbacAttributes converts the apiserver's attributes. As in Kubernetes,
// a request on one namespace object is in that namespace, so a
// RoleBinding in it may grant reading it.
func rbacAttributes(a apiserver.Attributes, group string) auth.Attributes {
	out := auth.Attributes{Verb: a.Verb, APIGroup: group, Resource: a.Resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name}
	if group == "" && a.Resource == "namespaces" && a.Name != "" {
		out.Namespace = a.Name
	}
	return out
}

// requireNonResource allows a non-resource URL to the admin and to users
// whose roles grant verb on the path (like /metrics); nodes never.
func (s *server) requireNonResource(verb string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := identityFrom(r.Context())
			ok, reason, err := s.authorizeUser(r.Context(), id, auth.Attributes{Verb: verb, NonResource: true, Path: r.URL.Path})
			if err != nil {
				writeStatus(w, api.NewStatusError(http.StatusServiceUnavailable, api.StatusReasonServiceUnavailable, "cannot check permissions right now"))
				return
			}
			if !ok {
				if id.Node != "" {
					reason = id.String() + " may not " + verb + " " + r.URL.Path
				}
				writeStatus(w, forbidden(reason))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// ensureDefaultRBAC creates the default ClusterRoles and bindings, and
// restores them when they differ unless annotated autoupdate=false. An
// unchanged role is not written (a start must not need disk space).
func (s *server) ensureDefaultRBAC(ctx context.Context) error {
	for _, cr := range auth.DefaultClusterRoles() {
		if err := s.ensureDefault(ctx, "clusterroles", cr, func(cur api.Object) bool {
			return reflect.DeepEqual(cur.(*api.ClusterRole).Rules, cr.Rules)
		}); err != nil {
			return err
		}
	}
	for _, b := range auth.DefaultClusterRoleBindings() {
		if err := s.ensureDefault(ctx, "clusterrolebindings", b, func(cur api.Object) bool {
			c := cur.(*api.ClusterRoleBinding)
			return reflect.DeepEqual(c.Subjects, b.Subjects) && c.RoleRef == b.RoleRef
		}); err != nil {
			return err
		}
	}
	return nil
}

func (s *server) ensureDefault(ctx context.Context, resource string, want api.Object, same func(api.Object) bool) error {
	m := want.GetObjectMeta()
	cur, err := s.store.Get(ctx, resource, "", m.Name)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		m.UID = newUID()
		m.CreationTimestamp = api.NewTime(s.clk.Now())
		m.Generation = 1
		if err := s.store.Create(ctx, want); err != nil && !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("create default %s %s: %w", resource, m.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("read default %s %s: %w", resource, m.Name, err)
	}
	if same(cur) || cur.GetObjectMeta().Annotations[auth.AutoupdateAnnotation] == "false" {
		return nil
	}
	cm := cur.GetObjectMeta()
	m.UID, m.CreationTimestamp, m.Generation, m.ResourceVersion = cm.UID, cm.CreationTimestamp, cm.Generation+1, cm.ResourceVersion
	if err := s.store.Update(ctx, want); err != nil {
		return fmt.Errorf("restore default %s %s: %w", resource, m.Name, err)
	}
	return nil
}
