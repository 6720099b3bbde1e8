package api

import (
	"fmt"
	"maps"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/skiffhq/skiff/api/labels"
)

// Validate checks obj, as it is about to be created, against Kubernetes'
// validation rules for its kind and returns every fault found, each named
// by its JSON field path ("spec.containers[0].image"); nil means valid.
// Callers run SetDefaults first, as the API server does: several fields
// (restartPolicy, imagePullPolicy, port protocols, strategies) are required
// here because defaulting always fills them. Namespaced objects must carry
// their namespace (the server copies it from the URL before validating).
// Validate only reads obj, accepts any input and never panics.
func Validate(obj Object) FieldErrors {
	if isNilObject(obj) {
		return nilObject()
	}
	if errs := ValidateListLengths(obj); len(errs) > 0 {
		return errs
	}
	var errs FieldErrors
	switch o := obj.(type) {
	case *Pod:
		errs = validatePod(o)
	case *Node:
		errs = validateNode(o)
	case *Namespace:
		errs = validateNamespace(o)
	case *Secret:
		errs = validateSecret(o)
	case *ConfigMap:
		errs = validateConfigMap(o)
	case *Event:
		errs = validateEvent(o)
	case *Deployment:
		errs = validateDeployment(o)
	case *DaemonSet:
		errs = validateDaemonSet(o)
	case *ReplicaSet:
		errs = validateReplicaSet(o)
	case *Job:
		errs = validateJob(o)
	case *CronJob:
		errs = validateCronJob(o)
	case *Service:
		errs = validateService(o)
	case *Endpoints:
		errs = validateEndpoints(o)
	case *EndpointSlice:
		errs = validateEndpointSlice(o)
	case *ServiceAccount:
		errs = validateObjectMeta(&o.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	case *Role:
		errs = validateRole(&o.ObjectMeta, true, o.Rules)
	case *ClusterRole:
		errs = validateRole(&o.ObjectMeta, false, o.Rules)
	case *RoleBinding:
		errs = validateBinding(&o.ObjectMeta, true, o.Subjects, o.RoleRef)
	case *ClusterRoleBinding:
		errs = validateBinding(&o.ObjectMeta, false, o.Subjects, o.RoleRef)
	case *PodDisruptionBudget:
		errs = validatePodDisruptionBudget(o)
	case *StatefulSet:
		errs = validateStatefulSet(o)
	case *PersistentVolumeClaim:
		errs = validatePersistentVolumeClaim(o)
	case *PersistentVolume:
		errs = validatePersistentVolume(o)
	case *StorageClass:
		errs = validateStorageClass(o)
	default:
		return FieldErrors{NotSupported(NewPath("kind"), fmt.Sprintf("%T", obj), supportedKinds())}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// isNilObject reports whether obj is nil or a typed nil pointer.
func isNilObject(obj Object) bool {
	if obj == nil {
		return true
	}
	switch o := obj.(type) {
	case *Pod:
		return o == nil
	case *Node:
		return o == nil
	case *Namespace:
		return o == nil
	case *Secret:
		return o == nil
	case *ConfigMap:
		return o == nil
	case *Event:
		return o == nil
	case *Deployment:
		return o == nil
	case *DaemonSet:
		return o == nil
	case *ReplicaSet:
		return o == nil
	case *Job:
		return o == nil
	case *CronJob:
		return o == nil
	case *Service:
		return o == nil
	case *Endpoints:
		return o == nil
	case *EndpointSlice:
		return o == nil
	case *ServiceAccount:
		return o == nil
	case *Role:
		return o == nil
	case *ClusterRole:
		return o == nil
	case *RoleBinding:
		return o == nil
	case *ClusterRoleBinding:
		return o == nil
	case *PodDisruptionBudget:
		return o == nil
	case *StatefulSet:
		return o == nil
	case *PersistentVolumeClaim:
		return o == nil
	case *PersistentVolume:
		return o == nil
	case *StorageClass:
		return o == nil
	}
	return false
}

func nilObject() FieldErrors {
	return FieldErrors{Required(Path{}, "object must not be nil")}
}

func supportedKinds() []string {
	var kinds []string
	for _, r := range Resources() {
		kinds = append(kinds, r.Kind)
	}
	return kinds
}

// Messages shared by several rules, worded as Kubernetes words them.
const (
	isNegativeErrorMsg     = "must be greater than or equal to 0"
	fieldImmutableErrorMsg = "field is immutable"
	notValidSelectorOpMsg  = "not a valid selector operator"
	fileModeErrorMsg       = "must be a number between 0 and 0777 (octal), both inclusive"
	mustBeAbsolutePathMsg  = "must be an absolute path"
	moreThanOneVolumeMsg   = "may not specify more than 1 volume type"
	moreThanOneHandlerMsg  = "may not specify more than 1 handler type"

	// maxConfigSize bounds the summed values of a Secret or ConfigMap.
	maxConfigSize = 1 << 20
	// maxAnnotationsSize bounds the summed keys and values of annotations.
	maxAnnotationsSize = 256 << 10
	// maxEventReasonLength bounds Event.reason.
	maxEventReasonLength = 128
)

// Values of string fields that the type files leave as plain strings.
const (
	ProtocolSCTP Protocol = "SCTP"

	URISchemeHTTP  = "HTTP"
	URISchemeHTTPS = "HTTPS"

	DNSClusterFirstWithHostNet = "ClusterFirstWithHostNet"
	DNSClusterFirst            = "ClusterFirst"
	DNSDefault                 = "Default"
	DNSNone                    = "None"

	TolerationOpExists = "Exists"
	TolerationOpEqual  = "Equal"

	NodeSelectorOpIn           = "In"
	NodeSelectorOpNotIn        = "NotIn"
	NodeSelectorOpExists       = "Exists"
	NodeSelectorOpDoesNotExist = "DoesNotExist"
	NodeSelectorOpGt           = "Gt"
	NodeSelectorOpLt           = "Lt"

	// SecretType* are the secret types whose required keys are checked.
	SecretTypeOpaque           = "Opaque"
	SecretTypeDockercfg        = "kubernetes.io/dockercfg"
	SecretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	SecretTypeBasicAuth        = "kubernetes.io/basic-auth"
	SecretTypeSSHAuth          = "kubernetes.io/ssh-auth"
	SecretTypeTLS              = "kubernetes.io/tls"
)

func inclusiveRangeError(lo, hi int) string {
	return fmt.Sprintf("must be between %d and %d, inclusive", lo, hi)
}

func maxLenError(n int) string {
	return fmt.Sprintf("must be no more than %d characters", n)
}

// regexError words a syntax rule as Kubernetes does: the rule, examples,
// then the regular expression.
func regexError(msg, format string, examples ...string) string {
	var b strings.Builder
	b.WriteString(msg)
	if len(examples) > 0 {
		b.WriteString(" (e.g. ")
		for i, ex := range examples {
			if i > 0 {
				b.WriteString(" or ")
			}
			b.WriteString("'" + ex + "', ")
		}
		b.WriteString("regex used for validation is '" + format + "')")
	} else {
		b.WriteString(" (regex used for validation is '" + format + "')")
	}
	return b.String()
}

// sortedKeys returns the keys of m in order, so that errors come out in a
// stable order.
func sortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

const (
	configMapKeyFmt    = `[-._a-zA-Z0-9]+`
	configMapKeyErrMsg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
	httpHeaderNameFmt  = `[-A-Za-z0-9]+`
	httpHeaderErrMsg   = "a valid HTTP header must consist of alphanumeric characters or '-'"
	percentFmt         = `[0-9]+%`
	percentErrMsg      = "a valid percent string must be a numeric string followed by an ending '%'"
	envVarNameErrMsg   = "a valid environment variable name must consist only of printable ASCII characters other than '='"
)

// Compiled once; never modified.
var (
	configMapKeyRegexp   = regexp.MustCompile("^" + configMapKeyFmt + "$")
	httpHeaderNameRegexp = regexp.MustCompile("^" + httpHeaderNameFmt + "$")
	percentRegexp        = regexp.MustCompile("^" + percentFmt + "$")
	portNameRegexp       = regexp.MustCompile("^[-a-z0-9]+$")
)

// isConfigMapKey reports the problems with key as a Secret or ConfigMap key.
func isConfigMapKey(key string) []string {
	var errs []string
	if len(key) > labels.DNS1123SubdomainMaxLength {
		errs = append(errs, maxLenError(labels.DNS1123SubdomainMaxLength))
	}
	if !configMapKeyRegexp.MatchString(key) {
		errs = append(errs, regexError(configMapKeyErrMsg, configMapKeyFmt, "key.name", "KEY_NAME", "key-name"))
	}
	switch {
	case key == ".":
		errs = append(errs, "must not be '.'")
	case key == "..":
		errs = append(errs, "must not be '..'")
	case strings.HasPrefix(key, ".."):
		errs = append(errs, "must not start with '..'")
	}
	return errs
}

// isValidPortNum reports whether port is outside 1–65535.
func isValidPortNum(port int) []string {
	if port >= 1 && port <= 65535 {
		return nil
	}
	return []string{inclusiveRangeError(1, 65535)}
}

// isValidPortName reports the problems with name as an IANA_SVC_NAME.
func isValidPortName(name string) []string {
	var errs []string
	if len(name) > 15 {
		errs = append(errs, maxLenError(15))
	}
	if !portNameRegexp.MatchString(name) {
		errs = append(errs, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
	}
	if !strings.ContainsAny(name, "abcdefghijklmnopqrstuvwxyz") {
		errs = append(errs, "must contain at least one letter (a-z)")
	}
	if strings.Contains(name, "--") {
		errs = append(errs, "must not contain consecutive hyphens")
	}
	if name != "" && (name[0] == '-' || name[len(name)-1] == '-') {
		errs = append(errs, "must not begin or end with a hyphen")
	}
	return errs
}

// isEnvVarName applies Kubernetes' current (relaxed) rule: any printable
// ASCII but '='.
func isEnvVarName(name string) []string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < ' ' || c > '~' || c == '=' {
			return []string{envVarNameErrMsg}
		}
	}
	return nil
}

func isHTTPHeaderName(name string) []string {
	if httpHeaderNameRegexp.MatchString(name) {
		return nil
	}
	return []string{regexError(httpHeaderErrMsg, httpHeaderNameFmt, "X-Header-Name")}
}

func isValidPercent(s string) []string {
	if percentRegexp.MatchString(s) {
		return nil
	}
	return []string{regexError(percentErrMsg, percentFmt, "1%", "93%")}
}

// validateDNSLabel reports value at p unless it is a DNS-1123 label.
func validateDNSLabel(value string, p Path) FieldErrors {
	var errs FieldErrors
	for _, msg := range labels.IsDNS1123Label(value) {
		errs = append(errs, Invalid(p, value, msg))
	}
	return errs
}

// validateDNSSubdomain reports value at p unless it is a DNS-1123 subdomain.
func validateDNSSubdomain(value string, p Path) FieldErrors {
	var errs FieldErrors
	for _, msg := range labels.IsDNS1123Subdomain(value) {
		errs = append(errs, Invalid(p, value, msg))
	}
	return errs
}

// validateQualifiedName reports value at p unless it is a valid label key.
func validateQualifiedName(value string, p Path) FieldErrors {
	var errs FieldErrors
	for _, msg := range labels.IsQualifiedName(value) {
		errs = append(errs, Invalid(p, value, msg))
	}
	return errs
}

func validateLabelValue(value string, p Path) FieldErrors {
	var errs FieldErrors
	for _, msg := range labels.IsValidLabelValue(value) {
		errs = append(errs, Invalid(p, value, msg))
	}
	return errs
}

func validateNonnegative(v int64, p Path) FieldErrors {
	if v < 0 {
		return FieldErrors{Invalid(p, v, isNegativeErrorMsg)}
	}
	return nil
}

// validateOneOf reports value at p as Required when empty and NotSupported
// when not in allowed.
func validateOneOf(value string, allowed []string, p Path) FieldErrors {
	if value == "" {
		return FieldErrors{Required(p, "")}
	}
	if !slices.Contains(allowed, value) {
		return FieldErrors{NotSupported(p, value, allowed)}
	}
	return nil
}

// validateLocalDescendingPath requires a relative path without "..".
func validateLocalDescendingPath(target string, p Path) FieldErrors {
	var errs FieldErrors
	if path.IsAbs(target) {
		errs = append(errs, Invalid(p, target, "must be a relative path"))
	}
	return append(errs, validatePathNoBacksteps(target, p)...)
}

func validatePathNoBacksteps(target string, p Path) FieldErrors {
	for _, part := range strings.Split(target, "/") {
		if part == ".." {
			return FieldErrors{Invalid(p, target, "must not contain '..'")}
		}
	}
	return nil
}

// validateCIDR reports value at p unless it parses as a CIDR.
func validateCIDR(value string, p Path) FieldErrors {
	if _, err := netip.ParsePrefix(value); err != nil {
		return FieldErrors{Invalid(p, value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")}
	}
	return nil
}

// ValidateNodeName checks a node name (a DNS subdomain) and returns what
// is wrong with it, or "".
func ValidateNodeName(name string) string {
	if errs := validateDNSSubdomain(name, NewPath("metadata", "name")); len(errs) > 0 {
		return errs[0].Message()
	}
	return ""
}
