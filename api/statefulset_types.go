package api

import "github.com/skiffhq/skiff/api/labels"

// StatefulSet runs pods with stable names (<name>-<ordinal>) and stable
// storage (one claim per volumeClaimTemplate and ordinal) (apps/v1).
type StatefulSet struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       StatefulSetSpec   `json:"spec"`
	Status     StatefulSetStatus `json:"status,omitzero"`
}

// Pod management policies and update strategies.
const (
	OrderedReadyPodManagement = "OrderedReady"
	ParallelPodManagement     = "Parallel"
	RollingUpdateStatefulSet  = "RollingUpdate"
	OnDeleteStatefulSet       = "OnDelete"
)

// StatefulSetSpec is the desired state of a StatefulSet.
type StatefulSetSpec struct {
	// Desired pods, named <name>-<ordinal>. Default 1.
	Replicas *int32 `json:"replicas,omitempty"`
	// Selects the StatefulSet's pods; must match the template's labels.
	Selector *LabelSelector `json:"selector"`
	// The pods the StatefulSet runs.
	Template PodTemplateSpec `json:"template"`
	// Claims each pod gets, named <template>-<name>-<ordinal>; they outlive the pods.
	VolumeClaimTemplates []PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// Headless Service that gives the pods stable DNS names (pod subdomain).
	ServiceName string `json:"serviceName,omitempty"`
	// OrderedReady (default: one pod at a time, in ordinal order) or Parallel.
	PodManagementPolicy string `json:"podManagementPolicy,omitempty"`
	// RollingUpdate (default; highest ordinal first, down to partition) or OnDelete.
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitzero"`
	// Old revisions kept. Stored only.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// Seconds a pod must be ready to count as available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// What happens to claims when the set is deleted or scaled down; skiff retains them.
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	// The first ordinal (default 0).
	Ordinals *StatefulSetOrdinals `json:"ordinals,omitempty"`
}

// StatefulSetUpdateStrategy says how pods are replaced on a template
// change.
type StatefulSetUpdateStrategy struct {
	Type          string                            `json:"type,omitempty"`
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy: pods with an ordinal below partition
// keep their revision.
type RollingUpdateStatefulSetStrategy struct {
	Partition      *int32       `json:"partition,omitempty"`
	MaxUnavailable *IntOrString `json:"maxUnavailable,omitempty"`
}

// StatefulSetPersistentVolumeClaimRetentionPolicy says what happens to
// the claims when the set is deleted or scaled down (stored; skiff
// retains them, the default).
type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	WhenDeleted string `json:"whenDeleted,omitempty"`
	WhenScaled  string `json:"whenScaled,omitempty"`
}

// StatefulSetOrdinals sets the first ordinal.
type StatefulSetOrdinals struct {
	Start int32 `json:"start"`
}

// StatefulSetStatus is the observed state of a StatefulSet.
type StatefulSetStatus struct {
	ObservedGeneration int64                 `json:"observedGeneration,omitempty"`
	Replicas           int32                 `json:"replicas"`
	ReadyReplicas      int32                 `json:"readyReplicas,omitempty"`
	CurrentReplicas    int32                 `json:"currentReplicas,omitempty"`
	UpdatedReplicas    int32                 `json:"updatedReplicas,omitempty"`
	CurrentRevision    string                `json:"currentRevision,omitempty"`
	UpdateRevision     string                `json:"updateRevision,omitempty"`
	CollisionCount     *int32                `json:"collisionCount,omitempty"`
	AvailableReplicas  int32                 `json:"availableReplicas"`
	Conditions         []DeploymentCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// SetDefaultsStatefulSet defaults a StatefulSet as Kubernetes does: 1
// replica, OrderedReady, RollingUpdate with partition 0, a history of 10,
// the template's pod spec and its claims' defaults.
func SetDefaultsStatefulSet(s *StatefulSet) {
	if s == nil {
		return
	}
	if s.Spec.Replicas == nil {
		s.Spec.Replicas = ptrTo(int32(1))
	}
	if s.Spec.PodManagementPolicy == "" {
		s.Spec.PodManagementPolicy = OrderedReadyPodManagement
	}
	us := &s.Spec.UpdateStrategy
	if us.Type == "" {
		us.Type = RollingUpdateStatefulSet
	}
	if us.Type == RollingUpdateStatefulSet {
		if us.RollingUpdate == nil {
			us.RollingUpdate = &RollingUpdateStatefulSetStrategy{}
		}
		if us.RollingUpdate.Partition == nil {
			us.RollingUpdate.Partition = ptrTo(int32(0))
		}
	}
	if s.Spec.RevisionHistoryLimit == nil {
		s.Spec.RevisionHistoryLimit = ptrTo(DefaultRevisionHistoryLimit)
	}
	if s.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Retain", WhenScaled: "Retain"}
	}
	SetDefaultsPodSpec(&s.Spec.Template.Spec)
	for i := range s.Spec.VolumeClaimTemplates {
		SetDefaultsPersistentVolumeClaim(&s.Spec.VolumeClaimTemplates[i])
		s.Spec.VolumeClaimTemplates[i].Status = PersistentVolumeClaimStatus{}
	}
}

func validateStatefulSet(s *StatefulSet) FieldErrors {
	errs := validateObjectMeta(&s.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	p := NewPath("spec")
	if s.Spec.Replicas != nil {
		errs = append(errs, validateNonnegative(int64(*s.Spec.Replicas), p.Child("replicas"))...)
	}
	// The containers mount the claim templates by name: they count as
	// the pod's volumes.
	t := s.Spec.Template
	t.Spec.Volumes = append([]Volume(nil), t.Spec.Volumes...)
	for _, c := range s.Spec.VolumeClaimTemplates {
		if c.Name != "" && !hasVolume(t.Spec.Volumes, c.Name) {
			t.Spec.Volumes = append(t.Spec.Volumes, Volume{Name: c.Name, VolumeSource: VolumeSource{PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
		}
	}
	errs = append(errs, validateWorkloadTemplate(s.Spec.Selector, &t, "statefulset", p)...)
	switch s.Spec.PodManagementPolicy {
	case OrderedReadyPodManagement, ParallelPodManagement, "":
	default:
		errs = append(errs, NotSupported(p.Child("podManagementPolicy"), s.Spec.PodManagementPolicy, []string{OrderedReadyPodManagement, ParallelPodManagement}))
	}
	us := s.Spec.UpdateStrategy
	switch us.Type {
	case RollingUpdateStatefulSet, "":
		if ru := us.RollingUpdate; ru != nil && ru.Partition != nil {
			errs = append(errs, validateNonnegative(int64(*ru.Partition), p.Child("updateStrategy").Child("rollingUpdate").Child("partition"))...)
		}
	case OnDeleteStatefulSet:
		if us.RollingUpdate != nil {
			errs = append(errs, Forbidden(p.Child("updateStrategy").Child("rollingUpdate"), "only allowed for updateStrategy 'RollingUpdate'"))
		}
	default:
		errs = append(errs, NotSupported(p.Child("updateStrategy").Child("type"), us.Type, []string{RollingUpdateStatefulSet, OnDeleteStatefulSet}))
	}
	if o := s.Spec.Ordinals; o != nil {
		errs = append(errs, validateNonnegative(int64(o.Start), p.Child("ordinals").Child("start"))...)
	}
	names := map[string]bool{}
	for i := range s.Spec.VolumeClaimTemplates {
		c := &s.Spec.VolumeClaimTemplates[i]
		cp := p.Child("volumeClaimTemplates").Index(i)
		if c.Name == "" {
			errs = append(errs, Required(cp.Child("metadata").Child("name"), ""))
		} else if names[c.Name] {
			errs = append(errs, Invalid(cp.Child("metadata").Child("name"), c.Name, "duplicate volume claim template name"))
		}
		names[c.Name] = true
		errs = append(errs, validateClaimSpec(&c.Spec, cp.Child("spec"))...)
	}
	return errs
}

func hasVolume(vs []Volume, name string) bool {
	for _, v := range vs {
		if v.Name == name {
			return true
		}
	}
	return false
}
