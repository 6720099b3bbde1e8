package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/storage"
)

// RBAC: roles and bindings are read from the store into a snapshot that
// is reused until one of the four kinds changes (storage.ResourceRevision
// says so, synchronously: a binding written is in force for the next
// request). Admins (cluster-admin) and nodes (the node authorizer) never
// get here.

// rbacKinds returns the resources a snapshot is made of.
func rbacKinds() [4]string {
	return [4]string{"roles", "rolebindings", "clusterroles", "clusterrolebindings"}
}

// rbacSnapshot is every role and binding at one revision. It is never
// changed once made.
type rbacSnapshot struct {
	rev          int64
	crbs         []*api.ClusterRoleBinding
	rbs          map[string][]*api.RoleBinding // by namespace
	roles        map[string]*api.Role          // by "namespace/name"
	clusterRoles map[string]*api.ClusterRole   // by name
}

// rbacCache hands out the current snapshot, rebuilding it after a change.
// It is safe for concurrent use.
type rbacCache struct {
	store *storage.Store

	mu   sync.Mutex
	snap *rbacSnapshot
}

// snapshot returns a snapshot no older than the last committed change to
// roles or bindings.
func (c *rbacCache) snapshot(ctx context.Context) (*rbacSnapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != nil && !c.changedSinceLocked(c.snap.rev) {
		return c.snap, nil
	}
	// Changes committed while listing have higher revisions, so the next
	// call rebuilds again.
	snap := &rbacSnapshot{rev: c.store.Revision(), rbs: map[string][]*api.RoleBinding{}, roles: map[string]*api.Role{}, clusterRoles: map[string]*api.ClusterRole{}}
	for _, kind := range rbacKinds() {
		objs, _, err := c.store.List(ctx, kind, storage.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("rbac: list %s: %w", kind, err)
		}
		for _, o := range objs {
			switch v := o.(type) {
			case *api.ClusterRoleBinding:
				snap.crbs = append(snap.crbs, v)
			case *api.RoleBinding:
				snap.rbs[v.Namespace] = append(snap.rbs[v.Namespace], v)
			case *api.Role:
				snap.roles[v.Namespace+"/"+v.Name] = v
			case *api.ClusterRole:
				snap.clusterRoles[v.Name] = v
			}
		}
	}
	c.snap = snap
	return snap, nil
}

func (c *rbacCache) changedSinceLocked(rev int64) bool {
	for _, kind := range rbacKinds() {
		if c.store.ResourceRevision(kind) > rev {
			return true
		}
	}
	return false
}

// resolver answers RBAC questions over a snapshot.
type resolver struct {
	cache *rbacCache
}

// rulesFor returns the rules granted to info in namespace ns (cluster-wide
// ones only when ns is "").
func (rv resolver) rulesFor(ctx context.Context, info api.UserInfo, ns string) ([]api.PolicyRule, error) {
	snap, err := rv.cache.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var rules []api.PolicyRule
	for _, b := range snap.crbs {
		if bindsAny(b.Subjects, info) {
			rules = append(rules, snap.roleRules("", b.RoleRef)...)
		}
	}
	if ns == "" {
		return rules, nil
	}
	for _, b := range snap.rbs[ns] {
		if bindsAny(b.Subjects, info) {
			rules = append(rules, snap.roleRules(ns, b.RoleRef)...)
		}
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
func (snap *rbacSnapshot) roleRules(ns string, ref api.RoleRef) []api.PolicyRule {
	if ref.Kind == "Role" {
		if r := snap.roles[ns+"/"+ref.Name]; r != nil {
			return r.Rules
		}
		return nil
	}
	if r := snap.clusterRoles[ref.Name]; r != nil {
		return r.Rules
	}
	return nil
}

// roleRules returns the rules of the role ref names, from the current
// snapshot.
func (rv resolver) roleRules(ctx context.Context, ns string, ref api.RoleRef) ([]api.PolicyRule, error) {
	snap, err := rv.cache.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return snap.roleRules(ns, ref), nil
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
	return resolver{cache: s.rbac}.allows(ctx, id.UserInfo(), a)
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
