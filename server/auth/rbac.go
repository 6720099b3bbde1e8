package auth

import (
	"strings"

	"github.com/skiffhq/skiff/api"
)

// Attributes are what RBAC matches a request against, as Kubernetes'
// authorizer.Attributes: a resource request (APIGroup, Resource,
// Subresource, Namespace, Name) or a non-resource request (Path).
type Attributes struct {
	Verb        string
	APIGroup    string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	// NonResource marks a request for Path rather than a resource.
	NonResource bool
	Path        string
}

// resourceString is "pods" or "pods/log", as rules name resources.
func (a Attributes) resourceString() string {
	if a.Subresource == "" {
		return a.Resource
	}
	return a.Resource + "/" + a.Subresource
}

// RuleAllows reports whether one rule grants a, with Kubernetes' matching:
// "*" matches any verb, group, resource or URL; "*/sub" any resource's
// subresource sub; resourceNames, when given, must contain the name (so
// they never grant list, watch or create, which carry no name); a
// nonResourceURL ending in "*" is a prefix.
func RuleAllows(r *api.PolicyRule, a Attributes) bool {
	if !hasOrStar(r.Verbs, a.Verb) {
		return false
	}
	if a.NonResource {
		for _, u := range r.NonResourceURLs {
			if u == "*" || u == a.Path || strings.HasSuffix(u, "*") && strings.HasPrefix(a.Path, strings.TrimSuffix(u, "*")) {
				return true
			}
		}
		return false
	}
	if !hasOrStar(r.APIGroups, a.APIGroup) || !resourceMatches(r.Resources, a) {
		return false
	}
	if len(r.ResourceNames) == 0 {
		return true
	}
	for _, n := range r.ResourceNames {
		if n == a.Name && a.Name != "" {
			return true
		}
	}
	return false
}

func hasOrStar(list []string, v string) bool {
	for _, x := range list {
		if x == "*" || x == v {
			return true
		}
	}
	return false
}

func resourceMatches(rules []string, a Attributes) bool {
	want := a.resourceString()
	for _, r := range rules {
		switch {
		case r == "*", r == want:
			return true
		case a.Subresource != "" && r == "*/"+a.Subresource:
			return true
		}
	}
	return false
}

// RulesAllow reports whether any of rules grants a.
func RulesAllow(rules []api.PolicyRule, a Attributes) bool {
	for i := range rules {
		if RuleAllows(&rules[i], a) {
			return true
		}
	}
	return false
}

// SubjectMatches reports whether s names user (or one of its groups).
// A ServiceAccount subject matches the service account's user name.
func SubjectMatches(s api.Subject, user string, groups []string) bool {
	switch s.Kind {
	case api.SubjectKindUser:
		return s.Name == user
	case api.SubjectKindGroup:
		for _, g := range groups {
			if g == s.Name {
				return true
			}
		}
	case api.SubjectKindServiceAccount:
		return ServiceAccountUser(s.Namespace, s.Name) == user
	}
	return false
}

// Covers reports whether owner's rules grant everything rule grants, the
// check that stops a user from creating a role, or binding one, with more
// than it has (Kubernetes' escalation check). A "*" in rule is covered
// only by a "*" in owner's.
func Covers(owner []api.PolicyRule, rule api.PolicyRule) bool {
	for _, atom := range breakdown(rule) {
		covered := false
		for i := range owner {
			if ruleCovers(&owner[i], &atom) {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
	}
	return true
}

// breakdown splits a rule into rules of one verb, group, resource (or
// URL) and name each.
func breakdown(r api.PolicyRule) []api.PolicyRule {
	var out []api.PolicyRule
	for _, v := range r.Verbs {
		if len(r.NonResourceURLs) > 0 {
			for _, u := range r.NonResourceURLs {
				out = append(out, api.PolicyRule{Verbs: []string{v}, NonResourceURLs: []string{u}})
			}
			continue
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if len(r.ResourceNames) == 0 {
					out = append(out, api.PolicyRule{Verbs: []string{v}, APIGroups: []string{g}, Resources: []string{res}})
					continue
				}
				for _, n := range r.ResourceNames {
					out = append(out, api.PolicyRule{Verbs: []string{v}, APIGroups: []string{g}, Resources: []string{res}, ResourceNames: []string{n}})
				}
			}
		}
	}
	return out
}

// ruleCovers reports whether owner grants the single-valued rule atom.
func ruleCovers(owner, atom *api.PolicyRule) bool {
	if !hasOrStar(owner.Verbs, atom.Verbs[0]) {
		return false
	}
	if len(atom.NonResourceURLs) > 0 {
		u := atom.NonResourceURLs[0]
		for _, o := range owner.NonResourceURLs {
			if o == "*" || o == u || strings.HasSuffix(o, "*") && strings.HasPrefix(u, strings.TrimSuffix(o, "*")) {
				return true
			}
		}
		return false
	}
	if !hasOrStar(owner.APIGroups, atom.APIGroups[0]) {
		return false
	}
	res := atom.Resources[0]
	ok := false
	for _, o := range owner.Resources {
		_, sub, hasSub := strings.Cut(res, "/")
		if o == "*" || o == res || hasSub && o == "*/"+sub {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	if len(owner.ResourceNames) == 0 {
		return true
	}
	return len(atom.ResourceNames) == 1 && hasString(owner.ResourceNames, atom.ResourceNames[0])
}

func hasString(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Well-known user and group names.
const (
	// UserAdmin is the admin token's user, in GroupMasters.
	UserAdmin = "skiff:admin"
	// GroupMasters is bound to cluster-admin (Kubernetes' system:masters).
	GroupMasters = "system:masters"
	// GroupAuthenticated holds every authenticated identity.
	GroupAuthenticated = "system:authenticated"
	// GroupNodes holds every node identity.
	GroupNodes = "system:nodes"
	// GroupServiceAccounts holds every service account;
	// "system:serviceaccounts:<ns>" those of one namespace.
	GroupServiceAccounts = "system:serviceaccounts"
	serviceAccountPrefix = "system:serviceaccount:"
	nodeUserPrefix       = "system:node:"
)

// ServiceAccountUser is the user name of a service account:
// system:serviceaccount:<namespace>:<name>.
func ServiceAccountUser(namespace, name string) string {
	return serviceAccountPrefix + namespace + ":" + name
}
