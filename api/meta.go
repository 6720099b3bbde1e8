package api

import (
	"time"

	"github.com/skiffhq/skiff/api/labels"
)

// TypeMeta carries an object's apiVersion and kind, as in Kubernetes.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// GetTypeMeta returns m itself so every type that embeds TypeMeta exposes it.
func (m *TypeMeta) GetTypeMeta() *TypeMeta { return m }

// ObjectMeta is the metadata every stored object has. Field names match
// Kubernetes' metav1.ObjectMeta.
type ObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	Generation                 int64             `json:"generation,omitempty"`
	CreationTimestamp          Time              `json:"creationTimestamp,omitzero"`
	DeletionTimestamp          *Time             `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference  `json:"ownerReferences,omitempty" patchStrategy:"merge" patchMergeKey:"uid"`
	Finalizers                 []string          `json:"finalizers,omitempty" patchStrategy:"merge"`
}

// GetObjectMeta returns m itself so every type that embeds ObjectMeta exposes it.
func (m *ObjectMeta) GetObjectMeta() *ObjectMeta { return m }

// OwnerReference points from a dependent object to its owner, for garbage
// collection and for "which controller made this pod".
type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                string `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

// ListMeta is the metadata of a list: the store revision it was read at.
type ListMeta struct {
	ResourceVersion    string `json:"resourceVersion,omitempty"`
	Continue           string `json:"continue,omitempty"`
	RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
}

// Object is implemented by every top-level resource type (pointer receivers).
// The store and the API server handle objects only through it.
type Object interface {
	GetTypeMeta() *TypeMeta
	GetObjectMeta() *ObjectMeta
}

// Time is a timestamp that marshals as RFC 3339 in UTC with second precision,
// and as null when zero, like Kubernetes' metav1.Time.
type Time struct {
	time.Time
}

// NewTime wraps t, truncated to seconds as it will be after a round trip.
func NewTime(t time.Time) Time { return Time{t.UTC().Truncate(time.Second)} }

// NewTimePtr is NewTime returning a pointer, for optional timestamps.
func NewTimePtr(t time.Time) *Time { v := NewTime(t); return &v }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	b := make([]byte, 0, len(time.RFC3339)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler; it accepts null and RFC 3339
// strings with or without fractional seconds.
func (t *Time) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		t.Time = time.Time{}
		return nil
	}
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return &time.ParseError{Layout: time.RFC3339, Value: s, Message: ": timestamps must be RFC 3339 strings"}
	}
	v, err := time.Parse(time.RFC3339, s[1:len(s)-1])
	if err != nil {
		return err
	}
	t.Time = v.UTC().Truncate(time.Second)
	return nil
}

// MicroTime is a timestamp with microsecond precision (Event.eventTime).
type MicroTime struct {
	time.Time
}

// MarshalJSON implements json.Marshaler.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + t.UTC().Format("2006-01-02T15:04:05.000000Z07:00") + `"`), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	var v Time
	s := string(b)
	if s == "null" {
		t.Time = time.Time{}
		return nil
	}
	if len(s) < 2 || s[0] != '"' {
		return v.UnmarshalJSON(b)
	}
	p, err := time.Parse(time.RFC3339Nano, s[1:len(s)-1])
	if err != nil {
		return err
	}
	t.Time = p.UTC().Truncate(time.Microsecond)
	return nil
}

// LabelSelector selects objects by labels (matchLabels AND matchExpressions).
// A nil *LabelSelector selects nothing; an empty one selects everything.
type LabelSelector struct {
	MatchLabels      map[string]string          `json:"matchLabels,omitempty"`
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one set-based requirement of a LabelSelector.
type LabelSelectorRequirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values,omitempty"`
}

// Label selector operators, as spelled in LabelSelectorRequirement.Operator.
const (
	LabelSelectorOpIn           = "In"
	LabelSelectorOpNotIn        = "NotIn"
	LabelSelectorOpExists       = "Exists"
	LabelSelectorOpDoesNotExist = "DoesNotExist"
)

// AsSelector converts ls into a labels.Selector. A nil ls yields
// labels.Nothing(); invalid requirements yield an error naming them.
func (ls *LabelSelector) AsSelector() (labels.Selector, error) {
	if ls == nil {
		return labels.Nothing(), nil
	}
	var reqs []labels.Requirement
	for k, v := range ls.MatchLabels {
		r, err := labels.NewRequirement(k, labels.Equals, []string{v})
		if err != nil {
			return labels.Selector{}, err
		}
		reqs = append(reqs, r)
	}
	for _, e := range ls.MatchExpressions {
		var op labels.Operator
		switch e.Operator {
		case LabelSelectorOpIn:
			op = labels.In
		case LabelSelectorOpNotIn:
			op = labels.NotIn
		case LabelSelectorOpExists:
			op = labels.Exists
		case LabelSelectorOpDoesNotExist:
			op = labels.DoesNotExist
		default:
			return labels.Selector{}, &labelOpError{op: e.Operator}
		}
		r, err := labels.NewRequirement(e.Key, op, e.Values)
		if err != nil {
			return labels.Selector{}, err
		}
		reqs = append(reqs, r)
	}
	return labels.Everything().Add(reqs...), nil
}

type labelOpError struct{ op string }

func (e *labelOpError) Error() string {
	return "unsupported operator " + quote(e.op) + ": must be In, NotIn, Exists or DoesNotExist"
}

// MirrorPodAnnotation marks a mirror pod: the API copy of a static pod an
// agent runs from its pod-manifests directory. Its value is the static
// pod's hash. A node may create pods only with it and bound to itself.
const MirrorPodAnnotation = "skiff.io/mirror"
