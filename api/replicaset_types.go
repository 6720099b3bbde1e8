package api

import "github.com/skiffhq/skiff/api/labels"

// ReplicaSet keeps a number of pods of one template running (apps/v1).
// Deployments own one per template revision; a ReplicaSet without a
// controlling Deployment is kept at its replicas by itself.
type ReplicaSet struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       ReplicaSetSpec   `json:"spec"`
	Status     ReplicaSetStatus `json:"status,omitzero"`
}

// ReplicaSetSpec is the desired state of a ReplicaSet.
type ReplicaSetSpec struct {
	Replicas        *int32          `json:"replicas,omitempty"`
	MinReadySeconds int32           `json:"minReadySeconds,omitempty"`
	Selector        *LabelSelector  `json:"selector"`
	Template        PodTemplateSpec `json:"template"`
}

// ReplicaSetStatus is the observed state of a ReplicaSet.
type ReplicaSetStatus struct {
	Replicas             int32                 `json:"replicas"`
	FullyLabeledReplicas int32                 `json:"fullyLabeledReplicas,omitempty"`
	ReadyReplicas        int32                 `json:"readyReplicas,omitempty"`
	AvailableReplicas    int32                 `json:"availableReplicas,omitempty"`
	ObservedGeneration   int64                 `json:"observedGeneration,omitempty"`
	Conditions           []DeploymentCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// SetDefaultsReplicaSet defaults a ReplicaSet: 1 replica and the
// template's pod spec. rs may be nil.
func SetDefaultsReplicaSet(rs *ReplicaSet) {
	if rs == nil {
		return
	}
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptrTo(int32(1))
	}
	SetDefaultsPodSpec(&rs.Spec.Template.Spec)
}

func validateReplicaSet(rs *ReplicaSet) FieldErrors {
	errs := validateObjectMeta(&rs.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	p := NewPath("spec")
	if rs.Spec.Replicas != nil {
		errs = append(errs, validateNonnegative(int64(*rs.Spec.Replicas), p.Child("replicas"))...)
	}
	errs = append(errs, validateNonnegative(int64(rs.Spec.MinReadySeconds), p.Child("minReadySeconds"))...)
	errs = append(errs, validateWorkloadTemplate(rs.Spec.Selector, &rs.Spec.Template, "replicaset", p)...)
	return errs
}
