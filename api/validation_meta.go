package api

import (
	"fmt"
	"strings"
	"time"
)

// nameRule checks an object name and returns what is wrong with it.
type nameRule func(name string) []string

// validateObjectMeta checks the metadata of a top-level object: its name
// (or generateName) against nameOK, its namespace (required when namespaced,
// forbidden otherwise), labels, annotations, owner references and
// finalizers.
func validateObjectMeta(m *ObjectMeta, namespaced bool, nameOK nameRule, p Path) FieldErrors {
	var errs FieldErrors
	if m.GenerateName != "" {
		for _, msg := range nameOK(maskTrailingDash(m.GenerateName)) {
			errs = append(errs, Invalid(p.Child("generateName"), m.GenerateName, msg))
		}
	}
	if m.Name == "" {
		if m.GenerateName == "" {
			errs = append(errs, Required(p.Child("name"), "name or generateName is required"))
		}
	} else {
		for _, msg := range nameOK(m.Name) {
			errs = append(errs, Invalid(p.Child("name"), m.Name, msg))
		}
	}
	if namespaced {
		if m.Namespace == "" {
			errs = append(errs, Required(p.Child("namespace"), ""))
		} else {
			errs = append(errs, validateDNSLabel(m.Namespace, p.Child("namespace"))...)
		}
	} else if m.Namespace != "" {
		errs = append(errs, Forbidden(p.Child("namespace"), "not allowed on this type"))
	}
	errs = append(errs, validateNonnegative(m.Generation, p.Child("generation"))...)
	errs = append(errs, validateLabels(m.Labels, p.Child("labels"))...)
	errs = append(errs, validateAnnotations(m.Annotations, p.Child("annotations"))...)
	errs = append(errs, validateOwnerReferences(m.OwnerReferences, p.Child("ownerReferences"))...)
	for i, f := range m.Finalizers {
		errs = append(errs, validateFinalizerName(f, p.Child("finalizers").Index(i))...)
	}
	return errs
}

// maskTrailingDash lets a generateName end in '-', as the generated suffix
// will follow it.
func maskTrailingDash(name string) string {
	if len(name) > 1 && strings.HasSuffix(name, "-") {
		return name[:len(name)-1] + "a"
	}
	return name
}

// validateLabels checks label keys and values; like Kubernetes, it names
// the whole map (metadata.labels) in errors and shows the bad key or value.
func validateLabels(l map[string]string, p Path) FieldErrors {
	var errs FieldErrors
	for _, k := range sortedKeys(l) {
		errs = append(errs, validateQualifiedName(k, p)...)
		errs = append(errs, validateLabelValue(l[k], p)...)
	}
	return errs
}

// validateAnnotations checks that keys are qualified names (in any case)
// and that keys and values together stay under 256 KiB.
func validateAnnotations(a map[string]string, p Path) FieldErrors {
	var errs FieldErrors
	size := 0
	for _, k := range sortedKeys(a) {
		for _, msg := range validateQualifiedName(strings.ToLower(k), p) {
			msg.BadValue = k
			errs = append(errs, msg)
		}
		size += len(k) + len(a[k])
	}
	if size > maxAnnotationsSize {
		errs = append(errs, TooLong(p, maxAnnotationsSize))
	}
	return errs
}

func validateOwnerReferences(refs []OwnerReference, p Path) FieldErrors {
	var errs FieldErrors
	firstController := ""
	for i, ref := range refs {
		ip := p.Index(i)
		if apiVersionVersion(ref.APIVersion) == "" {
			errs = append(errs, Invalid(ip.Child("apiVersion"), ref.APIVersion, "version must not be empty"))
		}
		if ref.Kind == "" {
			errs = append(errs, Invalid(ip.Child("kind"), ref.Kind, "kind must not be empty"))
		}
		if ref.Name == "" {
			errs = append(errs, Invalid(ip.Child("name"), ref.Name, "name must not be empty"))
		}
		if ref.UID == "" {
			errs = append(errs, Invalid(ip.Child("uid"), ref.UID, "uid must not be empty"))
		}
		if ref.Controller != nil && *ref.Controller {
			this := ref.Kind + "/" + ref.Name
			if firstController != "" {
				errs = append(errs, Invalid(ip.Child("controller"), true, fmt.Sprintf(
					"Only one reference can have Controller set to true. Found \"true\" in references for %s and %s",
					firstController, this)))
			} else {
				firstController = this
			}
		}
	}
	return errs
}

// apiVersionVersion returns the version part of "group/version" or
// "version", or "" when apiVersion is malformed.
func apiVersionVersion(apiVersion string) string {
	switch parts := strings.Split(apiVersion, "/"); len(parts) {
	case 1:
		return parts[0]
	case 2:
		return parts[1]
	default:
		return ""
	}
}

func validateFinalizerName(name string, p Path) FieldErrors {
	errs := validateQualifiedName(name, p)
	if len(errs) == 0 && !strings.Contains(name, "/") && !isStandardFinalizer(name) {
		errs = append(errs, Invalid(p, name, "name is neither a standard finalizer name nor is it fully qualified"))
	}
	return errs
}

// isStandardFinalizer reports whether name may go without a domain prefix.
func isStandardFinalizer(name string) bool {
	switch name {
	case "kubernetes", "orphan", "foregroundDeletion":
		return true
	}
	return false
}

// validateLabelSelector checks a workload's label selector: its
// matchLabels as labels and each matchExpressions requirement.
func validateLabelSelector(s *LabelSelector, p Path) FieldErrors {
	if s == nil {
		return nil
	}
	errs := validateLabels(s.MatchLabels, p.Child("matchLabels"))
	for i, r := range s.MatchExpressions {
		ip := p.Child("matchExpressions").Index(i)
		switch r.Operator {
		case LabelSelectorOpIn, LabelSelectorOpNotIn:
			if len(r.Values) == 0 {
				errs = append(errs, Required(ip.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case LabelSelectorOpExists, LabelSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				errs = append(errs, Forbidden(ip.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		default:
			errs = append(errs, Invalid(ip.Child("operator"), r.Operator, notValidSelectorOpMsg))
		}
		errs = append(errs, validateQualifiedName(r.Key, ip.Child("key"))...)
		for j, v := range r.Values {
			errs = append(errs, validateLabelValue(v, ip.Child("values").Index(j))...)
		}
	}
	return errs
}

// validateObjectMetaUpdate checks that the identity of an object does not
// change: name, namespace, uid and creationTimestamp are immutable, as in
// Kubernetes. The API server copies uid and creationTimestamp from the
// stored object when the body leaves them out, as Kubernetes does, before
// calling ValidateUpdate.
func validateObjectMetaUpdate(n, o *ObjectMeta, p Path) FieldErrors {
	var errs FieldErrors
	if n.Name != o.Name {
		errs = append(errs, Invalid(p.Child("name"), n.Name, fieldImmutableErrorMsg))
	}
	if n.Namespace != o.Namespace {
		errs = append(errs, Invalid(p.Child("namespace"), n.Namespace, fieldImmutableErrorMsg))
	}
	if n.UID != o.UID {
		errs = append(errs, Invalid(p.Child("uid"), n.UID, fieldImmutableErrorMsg))
	}
	if !n.CreationTimestamp.Equal(o.CreationTimestamp.Time) {
		v := ""
		if !n.CreationTimestamp.IsZero() {
			v = n.CreationTimestamp.UTC().Format(time.RFC3339)
		}
		errs = append(errs, Invalid(p.Child("creationTimestamp"), v, fieldImmutableErrorMsg))
	}
	return errs
}

// ValidateLabels checks label keys and values (the agent's --labels, for
// one), naming p in errors.
func ValidateLabels(l map[string]string, p Path) FieldErrors { return validateLabels(l, p) }
