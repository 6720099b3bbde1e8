package api

import (
	"github.com/skiffhq/skiff/api/labels"
)

// PersistentVolumeClaim asks for storage (core/v1). skiff's built-in
// local-path provisioner answers claims of the local-path StorageClass
// with a directory on the node that first runs a pod using the claim.
type PersistentVolumeClaim struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       PersistentVolumeClaimSpec   `json:"spec"`
	Status     PersistentVolumeClaimStatus `json:"status,omitzero"`
}

// PersistentVolumeClaimSpec is what a claim asks for.
type PersistentVolumeClaimSpec struct {
	// Access modes the volume must have (ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod).
	AccessModes []string `json:"accessModes,omitempty"`
	// Selects pre-made volumes to bind. Stored only.
	Selector *LabelSelector `json:"selector,omitempty"`
	// The storage requested (requests.storage).
	Resources VolumeResourceRequirements `json:"resources,omitzero"`
	// The volume the claim is bound to.
	VolumeName string `json:"volumeName,omitempty"`
	// The class of storage; unset means the default class (local-path).
	StorageClassName *string `json:"storageClassName,omitempty"`
	// Filesystem (default) or Block.
	VolumeMode *string `json:"volumeMode,omitempty"`
}

// VolumeResourceRequirements is the storage a claim requests.
type VolumeResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

// Claim and volume phases.
const (
	ClaimPending    = "Pending"
	ClaimBound      = "Bound"
	ClaimLost       = "Lost"
	VolumeAvailable = "Available"
	VolumeBound     = "Bound"
	VolumeReleased  = "Released"
	VolumeFailed    = "Failed"
)

// PersistentVolumeClaimStatus is the observed state of a claim.
type PersistentVolumeClaimStatus struct {
	Phase       string       `json:"phase,omitempty"`
	AccessModes []string     `json:"accessModes,omitempty"`
	Capacity    ResourceList `json:"capacity,omitempty"`
}

// PersistentVolume is a piece of storage (core/v1, cluster-scoped).
type PersistentVolume struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       PersistentVolumeSpec   `json:"spec"`
	Status     PersistentVolumeStatus `json:"status,omitzero"`
}

// Reclaim policies.
const (
	ReclaimDelete = "Delete"
	ReclaimRetain = "Retain"
)

// PersistentVolumeSpec describes a volume. skiff's volumes are local:
// hostPath or local, pinned to one node by nodeAffinity.
type PersistentVolumeSpec struct {
	Capacity                      ResourceList          `json:"capacity,omitempty"`
	HostPath                      *HostPathVolumeSource `json:"hostPath,omitempty"`
	Local                         *LocalVolumeSource    `json:"local,omitempty"`
	AccessModes                   []string              `json:"accessModes,omitempty"`
	ClaimRef                      *ObjectReference      `json:"claimRef,omitempty"`
	PersistentVolumeReclaimPolicy string                `json:"persistentVolumeReclaimPolicy,omitempty"`
	StorageClassName              string                `json:"storageClassName,omitempty"`
	VolumeMode                    *string               `json:"volumeMode,omitempty"`
	NodeAffinity                  *VolumeNodeAffinity   `json:"nodeAffinity,omitempty"`
}

// LocalVolumeSource is a directory or disk of one node.
type LocalVolumeSource struct {
	Path   string  `json:"path"`
	FSType *string `json:"fsType,omitempty"`
}

// VolumeNodeAffinity pins a volume to the nodes it can be used on.
type VolumeNodeAffinity struct {
	Required *NodeSelector `json:"required,omitempty"`
}

// PersistentVolumeStatus is the observed state of a volume.
type PersistentVolumeStatus struct {
	Phase   string `json:"phase,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// StorageClass names a kind of storage and its provisioner
// (storage.k8s.io/v1, cluster-scoped).
type StorageClass struct {
	TypeMeta             `json:",inline"`
	ObjectMeta           `json:"metadata"`
	Provisioner          string            `json:"provisioner"`
	Parameters           map[string]string `json:"parameters,omitempty"`
	ReclaimPolicy        *string           `json:"reclaimPolicy,omitempty"`
	MountOptions         []string          `json:"mountOptions,omitempty"`
	AllowVolumeExpansion *bool             `json:"allowVolumeExpansion,omitempty"`
	VolumeBindingMode    *string           `json:"volumeBindingMode,omitempty"`
}

// Names of the built-in storage.
const (
	// LocalPathProvisioner provisions directories on the node.
	LocalPathProvisioner = "skiff.io/local-path"
	// LocalPathStorageClass is the default StorageClass.
	LocalPathStorageClass = "local-path"
	// AnnotationDefaultStorageClass marks the default StorageClass.
	AnnotationDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"
	// VolumeBindingWaitForFirstConsumer binds a claim when a pod using
	// it is scheduled; VolumeBindingImmediate at once.
	VolumeBindingWaitForFirstConsumer = "WaitForFirstConsumer"
	VolumeBindingImmediate            = "Immediate"
	// AccessReadWriteOnce is the access mode of local volumes.
	AccessReadWriteOnce = "ReadWriteOnce"
)

var accessModes = []string{"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"}

// SetDefaultsPersistentVolumeClaim defaults volumeMode to Filesystem.
func SetDefaultsPersistentVolumeClaim(c *PersistentVolumeClaim) {
	if c != nil && c.Spec.VolumeMode == nil {
		c.Spec.VolumeMode = ptrTo("Filesystem")
	}
	if c != nil && c.Status.Phase == "" {
		c.Status.Phase = ClaimPending
	}
}

// SetDefaultsPersistentVolume defaults the reclaim policy to Retain and
// volumeMode to Filesystem, as Kubernetes does for volumes made by hand.
func SetDefaultsPersistentVolume(v *PersistentVolume) {
	if v == nil {
		return
	}
	if v.Spec.PersistentVolumeReclaimPolicy == "" {
		v.Spec.PersistentVolumeReclaimPolicy = ReclaimRetain
	}
	if v.Spec.VolumeMode == nil {
		v.Spec.VolumeMode = ptrTo("Filesystem")
	}
	if v.Status.Phase == "" {
		v.Status.Phase = "Pending"
	}
}

// SetDefaultsStorageClass defaults the reclaim policy to Delete and the
// binding mode to Immediate, as Kubernetes does.
func SetDefaultsStorageClass(s *StorageClass) {
	if s == nil {
		return
	}
	if s.ReclaimPolicy == nil {
		s.ReclaimPolicy = ptrTo(ReclaimDelete)
	}
	if s.VolumeBindingMode == nil {
		s.VolumeBindingMode = ptrTo(VolumeBindingImmediate)
	}
}

func validateAccessModes(modes []string, p Path, required bool) FieldErrors {
	var errs FieldErrors
	if required && len(modes) == 0 {
		errs = append(errs, Required(p, "at least 1 access mode is required"))
	}
	for i, m := range modes {
		ok := false
		for _, a := range accessModes {
			ok = ok || a == m
		}
		if !ok {
			errs = append(errs, NotSupported(p.Index(i), m, accessModes))
		}
	}
	return errs
}

func validatePersistentVolumeClaim(c *PersistentVolumeClaim) FieldErrors {
	errs := validateObjectMeta(&c.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	return append(errs, validateClaimSpec(&c.Spec, NewPath("spec"))...)
}

func validateClaimSpec(s *PersistentVolumeClaimSpec, p Path) FieldErrors {
	errs := validateAccessModes(s.AccessModes, p.Child("accessModes"), true)
	if q, ok := s.Resources.Requests[ResourceStorage]; !ok {
		errs = append(errs, Required(p.Child("resources").Child("requests").Child("storage"), ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, Invalid(p.Child("resources").Child("requests").Child("storage"), q.String(), "must be greater than zero"))
	}
	if s.Selector != nil {
		errs = append(errs, validateLabelSelector(s.Selector, p.Child("selector"))...)
	}
	if m := s.VolumeMode; m != nil && *m != "Filesystem" && *m != "Block" {
		errs = append(errs, NotSupported(p.Child("volumeMode"), *m, []string{"Block", "Filesystem"}))
	}
	return errs
}

func validatePersistentVolume(v *PersistentVolume) FieldErrors {
	errs := validateObjectMeta(&v.ObjectMeta, false, labels.IsDNS1123Subdomain, NewPath("metadata"))
	p := NewPath("spec")
	s := &v.Spec
	errs = append(errs, validateAccessModes(s.AccessModes, p.Child("accessModes"), true)...)
	if q, ok := s.Capacity[ResourceStorage]; !ok {
		errs = append(errs, Required(p.Child("capacity").Child("storage"), ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, Invalid(p.Child("capacity").Child("storage"), q.String(), "must be greater than zero"))
	}
	switch {
	case s.HostPath != nil && s.Local != nil:
		errs = append(errs, Forbidden(p.Child("local"), moreThanOneVolumeMsg))
	case s.HostPath != nil:
		errs = append(errs, validateHostPathSource(s.HostPath, p.Child("hostPath"))...)
	case s.Local != nil:
		if s.Local.Path == "" {
			errs = append(errs, Required(p.Child("local").Child("path"), ""))
		}
	default:
		errs = append(errs, Required(p, "must specify a volume type (hostPath or local)"))
	}
	switch s.PersistentVolumeReclaimPolicy {
	case ReclaimDelete, ReclaimRetain, "":
	default:
		errs = append(errs, NotSupported(p.Child("persistentVolumeReclaimPolicy"), s.PersistentVolumeReclaimPolicy, []string{ReclaimDelete, ReclaimRetain}))
	}
	return errs
}

func validateStorageClass(s *StorageClass) FieldErrors {
	errs := validateObjectMeta(&s.ObjectMeta, false, labels.IsDNS1123Subdomain, NewPath("metadata"))
	if s.Provisioner == "" {
		errs = append(errs, Required(NewPath("provisioner"), ""))
	}
	if r := s.ReclaimPolicy; r != nil && *r != ReclaimDelete && *r != ReclaimRetain {
		errs = append(errs, NotSupported(NewPath("reclaimPolicy"), *r, []string{ReclaimDelete, ReclaimRetain}))
	}
	if m := s.VolumeBindingMode; m != nil && *m != VolumeBindingImmediate && *m != VolumeBindingWaitForFirstConsumer {
		errs = append(errs, NotSupported(NewPath("volumeBindingMode"), *m, []string{VolumeBindingImmediate, VolumeBindingWaitForFirstConsumer}))
	}
	return errs
}

// ResourceStorage is the size of a volume or claim.
const ResourceStorage ResourceName = "storage"

// LocalPathDir is the directory, under an agent's
// <data-dir>/agent/volumes, of the local-path volume named volume bound
// to claim ns/name ("pvc-<uid>_<ns>_<name>", as k3s names them). The
// agent derives it from the claim alone.
func LocalPathDir(volume, ns, name string) string { return volume + "_" + ns + "_" + name }

// validateClaimUpdate keeps a claim's spec fixed, as Kubernetes does,
// except binding it (volumeName from empty) and its requested size.
func validateClaimUpdate(n, o *PersistentVolumeClaim) FieldErrors {
	a, b := n.Spec, o.Spec
	if b.VolumeName == "" {
		a.VolumeName = ""
	}
	a.Resources, b.Resources = VolumeResourceRequirements{}, VolumeResourceRequirements{}
	if b.StorageClassName == nil {
		// The provisioner records the default class it used.
		a.StorageClassName = nil
	}
	if !semanticEqual(a, b) {
		return FieldErrors{Forbidden(NewPath("spec"), "spec is immutable after creation except resources.requests for bound claims")}
	}
	return nil
}
