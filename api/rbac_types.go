package api

// RBAC (rbac.authorization.k8s.io/v1), service accounts (core/v1) and the
// review kinds of authentication.k8s.io/v1 and authorization.k8s.io/v1,
// with Kubernetes' field names.

// PolicyRule grants verbs on resources (of APIGroups, optionally only the
// named ones) or on non-resource URLs. "*" matches anything.
type PolicyRule struct {
	Verbs           []string `json:"verbs"`
	APIGroups       []string `json:"apiGroups,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	ResourceNames   []string `json:"resourceNames,omitempty"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// Role is a namespaced set of rules.
type Role struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Rules      []PolicyRule `json:"rules"`
}

// AggregationRule is stored only: skiff does not aggregate roles.
type AggregationRule struct {
	ClusterRoleSelectors []LabelSelector `json:"clusterRoleSelectors,omitempty"`
}

// ClusterRole is a cluster-wide set of rules; bound by a RoleBinding it
// grants them in that binding's namespace only.
type ClusterRole struct {
	TypeMeta        `json:",inline"`
	ObjectMeta      `json:"metadata"`
	Rules           []PolicyRule     `json:"rules"`
	AggregationRule *AggregationRule `json:"aggregationRule,omitempty"` // stored only
}

// Subject is who a binding grants to: a User, a Group or a ServiceAccount
// (with its namespace).
type Subject struct {
	Kind      string `json:"kind"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// Subject kinds.
const (
	SubjectKindUser           = "User"
	SubjectKindGroup          = "Group"
	SubjectKindServiceAccount = "ServiceAccount"
)

// RoleRef names the Role or ClusterRole a binding grants. It may not
// change once the binding exists.
type RoleRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// RoleBinding grants a Role (or a ClusterRole) in its namespace.
type RoleBinding struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Subjects   []Subject `json:"subjects,omitempty"`
	RoleRef    RoleRef   `json:"roleRef"`
}

// ClusterRoleBinding grants a ClusterRole in every namespace and on
// cluster-scoped resources.
type ClusterRoleBinding struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Subjects   []Subject `json:"subjects,omitempty"`
	RoleRef    RoleRef   `json:"roleRef"`
}

// ServiceAccount is an identity for processes and people, which
// TokenRequest issues tokens for. Deleting it revokes every token.
type ServiceAccount struct {
	TypeMeta                     `json:",inline"`
	ObjectMeta                   `json:"metadata"`
	Secrets                      []ObjectReference      `json:"secrets,omitempty"`          // stored only
	ImagePullSecrets             []LocalObjectReference `json:"imagePullSecrets,omitempty"` // stored only
	AutomountServiceAccountToken *bool                  `json:"automountServiceAccountToken,omitempty"`
}

// TokenRequest (authentication.k8s.io/v1) asks for a token of a service
// account: POST .../serviceaccounts/{name}/token.
type TokenRequest struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       TokenRequestSpec   `json:"spec"`
	Status     TokenRequestStatus `json:"status,omitzero"`
}

// TokenRequestSpec is what the caller asks for.
type TokenRequestSpec struct {
	Audiences         []string              `json:"audiences"`
	ExpirationSeconds *int64                `json:"expirationSeconds,omitempty"`
	BoundObjectRef    *BoundObjectReference `json:"boundObjectRef,omitempty"` // stored only
}

// BoundObjectReference is accepted and ignored: skiff binds tokens to the
// service account only.
type BoundObjectReference struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
}

// TokenRequestStatus carries the issued token.
type TokenRequestStatus struct {
	Token               string `json:"token"`
	ExpirationTimestamp Time   `json:"expirationTimestamp"`
}

// UserInfo is an authenticated identity.
type UserInfo struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// SelfSubjectReview (authentication.k8s.io/v1) answers who the caller is
// (kubectl auth whoami).
type SelfSubjectReview struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Status     SelfSubjectReviewStatus `json:"status,omitzero"`
}

// SelfSubjectReviewStatus holds the caller's identity.
type SelfSubjectReviewStatus struct {
	UserInfo UserInfo `json:"userInfo"`
}

// ResourceAttributes describe a resource request for a review.
type ResourceAttributes struct {
	Namespace   string `json:"namespace,omitempty"`
	Verb        string `json:"verb,omitempty"`
	Group       string `json:"group,omitempty"`
	Version     string `json:"version,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Name        string `json:"name,omitempty"`
}

// NonResourceAttributes describe a non-resource request (a URL path).
type NonResourceAttributes struct {
	Path string `json:"path,omitempty"`
	Verb string `json:"verb,omitempty"`
}

// SelfSubjectAccessReviewSpec is the request to check; exactly one of its
// fields is set.
type SelfSubjectAccessReviewSpec struct {
	ResourceAttributes    *ResourceAttributes    `json:"resourceAttributes,omitempty"`
	NonResourceAttributes *NonResourceAttributes `json:"nonResourceAttributes,omitempty"`
}

// SubjectAccessReviewStatus is the answer.
type SubjectAccessReviewStatus struct {
	Allowed         bool   `json:"allowed"`
	Denied          bool   `json:"denied,omitempty"`
	Reason          string `json:"reason,omitempty"`
	EvaluationError string `json:"evaluationError,omitempty"`
}

// SelfSubjectAccessReview (authorization.k8s.io/v1) asks whether the
// caller may make a request (kubectl auth can-i).
type SelfSubjectAccessReview struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       SelfSubjectAccessReviewSpec `json:"spec"`
	Status     SubjectAccessReviewStatus   `json:"status,omitzero"`
}

// SelfSubjectRulesReview (authorization.k8s.io/v1) lists what the caller
// may do in a namespace (kubectl auth can-i --list).
type SelfSubjectRulesReview struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       SelfSubjectRulesReviewSpec `json:"spec"`
	Status     SubjectRulesReviewStatus   `json:"status,omitzero"`
}

// SelfSubjectRulesReviewSpec names the namespace to list rules for.
type SelfSubjectRulesReviewSpec struct {
	Namespace string `json:"namespace,omitempty"`
}

// ResourceRule is a rule about resources, as a rules review lists it.
type ResourceRule struct {
	Verbs         []string `json:"verbs"`
	APIGroups     []string `json:"apiGroups,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// NonResourceRule is a rule about URL paths.
type NonResourceRule struct {
	Verbs           []string `json:"verbs"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// SubjectRulesReviewStatus is the answer of a rules review. Incomplete is
// set when the list is not the whole truth (a node's authorizer is not
// rule-based).
type SubjectRulesReviewStatus struct {
	ResourceRules    []ResourceRule    `json:"resourceRules"`
	NonResourceRules []NonResourceRule `json:"nonResourceRules"`
	Incomplete       bool              `json:"incomplete"`
	EvaluationError  string            `json:"evaluationError,omitempty"`
}
