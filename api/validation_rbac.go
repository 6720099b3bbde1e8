package api

import (
	"strings"

	"github.com/skiffhq/skiff/api/labels"
)

// Caps on RBAC lists, like the pod spec caps in limits.go.
const (
	maxRules    = 256
	maxSubjects = 1024
)

// pathSegmentName is Kubernetes' rule for RBAC object names: anything
// that can be one URL path segment ("system:node" is valid).
func pathSegmentName(name string) []string {
	switch {
	case name == "." || name == "..":
		return []string{"may not be '.' or '..'"}
	case strings.ContainsAny(name, "/%"):
		return []string{"may not contain '/' or '%'"}
	case len(name) > 253:
		return []string{"must be no more than 253 characters"}
	}
	return nil
}

// validateRole checks a Role (namespaced) or ClusterRole.
func validateRole(m *ObjectMeta, namespaced bool, rules []PolicyRule) FieldErrors {
	errs := validateObjectMeta(m, namespaced, pathSegmentName, NewPath("metadata"))
	p := NewPath("rules")
	if len(rules) > maxRules {
		return append(errs, TooMany(p, len(rules), maxRules))
	}
	for i := range rules {
		errs = append(errs, validatePolicyRule(&rules[i], namespaced, p.Index(i))...)
	}
	return errs
}

// validatePolicyRule applies Kubernetes' rule: verbs are required; a rule
// is either about resources (apiGroups and resources) or about
// nonResourceURLs, the latter only in a ClusterRole.
func validatePolicyRule(r *PolicyRule, namespaced bool, p Path) FieldErrors {
	var errs FieldErrors
	if len(r.Verbs) == 0 {
		errs = append(errs, Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(r.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
			errs = append(errs, Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		for i, u := range r.NonResourceURLs {
			if !strings.HasPrefix(u, "/") && u != "*" {
				errs = append(errs, Invalid(p.Child("nonResourceURLs").Index(i), u, "must start with /"))
			}
		}
		return errs
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// validateBinding checks a RoleBinding (namespaced) or ClusterRoleBinding.
func validateBinding(m *ObjectMeta, namespaced bool, subjects []Subject, ref RoleRef) FieldErrors {
	errs := validateObjectMeta(m, namespaced, pathSegmentName, NewPath("metadata"))
	rp := NewPath("roleRef")
	if ref.APIGroup != GroupRBAC {
		errs = append(errs, NotSupported(rp.Child("apiGroup"), ref.APIGroup, []string{GroupRBAC}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	errs = append(errs, validateOneOf(ref.Kind, kinds, rp.Child("kind"))...)
	if ref.Name == "" {
		errs = append(errs, Required(rp.Child("name"), ""))
	} else {
		for _, msg := range pathSegmentName(ref.Name) {
			errs = append(errs, Invalid(rp.Child("name"), ref.Name, msg))
		}
	}
	sp := NewPath("subjects")
	if len(subjects) > maxSubjects {
		return append(errs, TooMany(sp, len(subjects), maxSubjects))
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, sp.Index(i))...)
	}
	return errs
}

func validateSubject(s Subject, p Path) FieldErrors {
	var errs FieldErrors
	if s.Name == "" {
		errs = append(errs, Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case SubjectKindServiceAccount:
		if s.APIGroup != "" {
			errs = append(errs, NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if s.Name != "" {
			errs = append(errs, validateDNSSubdomain(s.Name, p.Child("name"))...)
		}
		if s.Namespace == "" {
			errs = append(errs, Required(p.Child("namespace"), ""))
		} else {
			for _, msg := range labels.IsDNS1123Label(s.Namespace) {
				errs = append(errs, Invalid(p.Child("namespace"), s.Namespace, msg))
			}
		}
	case SubjectKindUser, SubjectKindGroup:
		if s.APIGroup != GroupRBAC {
			errs = append(errs, NotSupported(p.Child("apiGroup"), s.APIGroup, []string{GroupRBAC}))
		}
	default:
		errs = append(errs, NotSupported(p.Child("kind"), s.Kind, []string{SubjectKindServiceAccount, SubjectKindUser, SubjectKindGroup}))
	}
	return errs
}
