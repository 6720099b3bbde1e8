package api

import "github.com/skiffhq/skiff/api/labels"

// PodDisruptionBudget bounds how many of a set of pods voluntary
// disruptions (the eviction API, kubectl drain) may take down at once
// (policy/v1).
type PodDisruptionBudget struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       PodDisruptionBudgetSpec   `json:"spec"`
	Status     PodDisruptionBudgetStatus `json:"status,omitzero"`
}

// Unhealthy pod eviction policies.
const (
	IfHealthyBudget = "IfHealthyBudget"
	AlwaysAllow     = "AlwaysAllow"
)

// PodDisruptionBudgetSpec is the desired state of a PodDisruptionBudget:
// exactly one of minAvailable and maxUnavailable, each a count or a
// percentage of the selected pods.
type PodDisruptionBudgetSpec struct {
	MinAvailable               *IntOrString   `json:"minAvailable,omitempty"`
	Selector                   *LabelSelector `json:"selector,omitempty" patchStrategy:"replace"`
	MaxUnavailable             *IntOrString   `json:"maxUnavailable,omitempty"`
	UnhealthyPodEvictionPolicy *string        `json:"unhealthyPodEvictionPolicy,omitempty"`
}

// PodDisruptionBudgetStatus is the observed state of a
// PodDisruptionBudget.
type PodDisruptionBudgetStatus struct {
	ObservedGeneration int64             `json:"observedGeneration,omitempty"`
	DisruptedPods      map[string]Time   `json:"disruptedPods,omitempty"`
	DisruptionsAllowed int32             `json:"disruptionsAllowed"`
	CurrentHealthy     int32             `json:"currentHealthy"`
	DesiredHealthy     int32             `json:"desiredHealthy"`
	ExpectedPods       int32             `json:"expectedPods"`
	Conditions         []ConditionStatus `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// ConditionStatus is a metav1.Condition.
type ConditionStatus struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	LastTransitionTime Time   `json:"lastTransitionTime,omitzero"`
	Reason             string `json:"reason"`
	Message            string `json:"message"`
}

func validatePodDisruptionBudget(b *PodDisruptionBudget) FieldErrors {
	errs := validateObjectMeta(&b.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	p := NewPath("spec")
	s := &b.Spec
	if s.MinAvailable != nil && s.MaxUnavailable != nil {
		errs = append(errs, Invalid(p, nil, "minAvailable and maxUnavailable cannot be both set"))
	}
	for _, f := range []struct {
		name string
		v    *IntOrString
	}{{"minAvailable", s.MinAvailable}, {"maxUnavailable", s.MaxUnavailable}} {
		errs = append(errs, validateIntOrPercent(f.v, p.Child(f.name))...)
		errs = append(errs, validateNotMoreThan100Percent(f.v, p.Child(f.name))...)
	}
	if s.Selector != nil {
		errs = append(errs, validateLabelSelector(s.Selector, p.Child("selector"))...)
	}
	if u := s.UnhealthyPodEvictionPolicy; u != nil && *u != IfHealthyBudget && *u != AlwaysAllow {
		errs = append(errs, NotSupported(p.Child("unhealthyPodEvictionPolicy"), *u, []string{IfHealthyBudget, AlwaysAllow}))
	}
	return errs
}

// DisruptionBudget is what a PodDisruptionBudget allows given the pods it
// selects: how many must stay healthy, how many are, and so how many
// more may be disrupted.
type DisruptionBudget struct {
	Expected, Healthy, Desired, Allowed int32
}

// ComputeDisruptionBudget applies b to expected selected pods of which
// healthy are ready: minAvailable (a percentage rounds up) or
// expected−maxUnavailable (a percentage rounds up) must stay healthy; a
// budget with neither is minAvailable 1, as in Kubernetes.
func ComputeDisruptionBudget(b *PodDisruptionBudget, expected, healthy int) DisruptionBudget {
	desired := 0
	switch s := b.Spec; {
	case s.MaxUnavailable != nil:
		n, err := s.MaxUnavailable.ScaledValue(expected, true)
		if err != nil {
			n = 0
		}
		desired = max(expected-n, 0)
	case s.MinAvailable != nil:
		n, err := s.MinAvailable.ScaledValue(expected, true)
		if err != nil {
			n = expected
		}
		desired = n
	default:
		desired = 1
	}
	return DisruptionBudget{Expected: int32(expected), Healthy: int32(healthy), Desired: int32(desired), Allowed: int32(max(healthy-desired, 0))}
}
