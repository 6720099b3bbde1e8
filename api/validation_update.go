package api

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// podUpdateForbiddenMsg lists what a pod update may change, in Kubernetes'
// words plus skiff's one addition: spec.nodeName may be set once, which is
// how a pod is bound to a node.
const podUpdateForbiddenMsg = "pod updates may not change fields other than `spec.containers[*].image`," +
	"`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`," +
	"`spec.tolerations` (only additions to existing tolerations)," +
	"`spec.nodeName` (only from unset)"

// ValidateUpdate checks obj as an update of old, the stored object of the
// same kind. It runs every rule of Validate on obj and adds the update
// rules: metadata.name, namespace, uid and creationTimestamp never change;
// a pod's spec changes only in container images, activeDeadlineSeconds
// (set or lowered), added tolerations and a first nodeName; a Deployment's
// or DaemonSet's selector never changes; an immutable Secret's or
// ConfigMap's data never change, nor does it become mutable; a Secret's type,
// an Event's involvedObject and a Node's podCIDR(s), once set, never change.
// Callers run SetDefaults on obj first. ValidateUpdate only reads its
// arguments and never panics; old of another kind is itself an error.
func ValidateUpdate(obj, old Object) FieldErrors {
	errs := Validate(obj)
	if _, known := ResourceOf(obj); !known || isNilObject(obj) {
		return errs
	}
	if isNilObject(old) {
		return append(errs, Required(Path{}, "the object being updated must not be nil"))
	}
	if reflect.TypeOf(obj) != reflect.TypeOf(old) {
		return append(errs, Invalid(NewPath("kind"), fmt.Sprintf("%T", obj), fmt.Sprintf("may not change from %T", old)))
	}
	errs = append(errs, validateObjectMetaUpdate(obj.GetObjectMeta(), old.GetObjectMeta(), NewPath("metadata"))...)
	switch o := obj.(type) {
	case *Pod:
		errs = append(errs, validatePodUpdate(o, old.(*Pod))...)
	case *Node:
		errs = append(errs, validateNodeUpdate(o, old.(*Node))...)
	case *Secret:
		errs = append(errs, validateSecretUpdate(o, old.(*Secret))...)
	case *ConfigMap:
		errs = append(errs, validateConfigMapUpdate(o, old.(*ConfigMap))...)
	case *Event:
		if !semanticEqual(o.InvolvedObject, old.(*Event).InvolvedObject) {
			errs = append(errs, Invalid(NewPath("involvedObject"), nil, fieldImmutableErrorMsg))
		}
	case *Deployment:
		errs = append(errs, validateSelectorUpdate(o.Spec.Selector, old.(*Deployment).Spec.Selector)...)
	case *DaemonSet:
		errs = append(errs, validateSelectorUpdate(o.Spec.Selector, old.(*DaemonSet).Spec.Selector)...)
	case *ReplicaSet:
		errs = append(errs, validateSelectorUpdate(o.Spec.Selector, old.(*ReplicaSet).Spec.Selector)...)
	case *Job:
		errs = append(errs, validateJobUpdate(o, old.(*Job))...)
	case *Service:
		errs = append(errs, validateServiceUpdate(o, old.(*Service))...)
	case *EndpointSlice:
		if o.AddressType != old.(*EndpointSlice).AddressType {
			errs = append(errs, Invalid(NewPath("addressType"), o.AddressType, fieldImmutableErrorMsg))
		}
	case *RoleBinding:
		if o.RoleRef != old.(*RoleBinding).RoleRef {
			errs = append(errs, Invalid(NewPath("roleRef"), nil, "cannot change roleRef"))
		}
	case *ClusterRoleBinding:
		if o.RoleRef != old.(*ClusterRoleBinding).RoleRef {
			errs = append(errs, Invalid(NewPath("roleRef"), nil, "cannot change roleRef"))
		}
	case *StatefulSet:
		errs = append(errs, validateSelectorUpdate(o.Spec.Selector, old.(*StatefulSet).Spec.Selector)...)
	case *PersistentVolumeClaim:
		errs = append(errs, validateClaimUpdate(o, old.(*PersistentVolumeClaim))...)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// validatePodUpdate applies Kubernetes' pod update rule: compare the new
// spec, with the fields that may change copied from the old one, against
// the old spec.
func validatePodUpdate(n, o *Pod) FieldErrors {
	p := NewPath("spec")
	var errs FieldErrors
	if len(n.Spec.Containers) != len(o.Spec.Containers) {
		return append(errs, Forbidden(p.Child("containers"), "pod updates may not add or remove containers"))
	}
	if len(n.Spec.InitContainers) != len(o.Spec.InitContainers) {
		return append(errs, Forbidden(p.Child("initContainers"), "pod updates may not add or remove containers"))
	}
	if od := o.Spec.ActiveDeadlineSeconds; od != nil {
		ap := p.Child("activeDeadlineSeconds")
		switch nd := n.Spec.ActiveDeadlineSeconds; {
		case nd == nil:
			errs = append(errs, Invalid(ap, nil, "must not update from a positive integer to nil value"))
		case *nd > *od:
			errs = append(errs, Invalid(ap, *nd, "must be less than or equal to previous value"))
		}
	}
	errs = append(errs, validateOnlyAddedTolerations(n.Spec.Tolerations, o.Spec.Tolerations, p.Child("tolerations"))...)

	munged := n.Spec
	munged.Containers = slices.Clone(n.Spec.Containers)
	for i := range munged.Containers {
		munged.Containers[i].Image = o.Spec.Containers[i].Image
	}
	munged.InitContainers = slices.Clone(n.Spec.InitContainers)
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = o.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = o.Spec.ActiveDeadlineSeconds
	munged.Tolerations = o.Spec.Tolerations
	if o.Spec.NodeName == "" {
		munged.NodeName = ""
	}
	if changed := changedPaths(munged, o.Spec, p); len(changed) > 0 {
		errs = append(errs, Forbidden(p, podUpdateForbiddenMsg+"; changed: "+strings.Join(changed, ", ")))
	}
	return errs
}

// validateOnlyAddedTolerations requires every old toleration to survive,
// changed at most in its tolerationSeconds.
func validateOnlyAddedTolerations(n, o []Toleration, p Path) FieldErrors {
	for _, old := range o {
		found := false
		for _, t := range n {
			old.TolerationSeconds = t.TolerationSeconds
			if semanticEqual(old, t) {
				found = true
				break
			}
		}
		if !found {
			return FieldErrors{Forbidden(p, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

func validateNodeUpdate(n, o *Node) FieldErrors {
	var errs FieldErrors
	const msg = "node updates may not change podCIDR except from \"\" to valid"
	if o.Spec.PodCIDR != "" && n.Spec.PodCIDR != o.Spec.PodCIDR {
		errs = append(errs, Forbidden(NewPath("spec", "podCIDR"), msg))
	}
	if len(o.Spec.PodCIDRs) > 0 && !semanticEqual(n.Spec.PodCIDRs, o.Spec.PodCIDRs) {
		errs = append(errs, Forbidden(NewPath("spec", "podCIDRs"), msg))
	}
	return errs
}

const immutableWhenSetMsg = "field is immutable when `immutable` is set"

func validateSecretUpdate(n, o *Secret) FieldErrors {
	var errs FieldErrors
	if n.Type != o.Type {
		errs = append(errs, Invalid(NewPath("type"), n.Type, fieldImmutableErrorMsg))
	}
	if o.Immutable != nil && *o.Immutable {
		if n.Immutable == nil || !*n.Immutable {
			errs = append(errs, Forbidden(NewPath("immutable"), immutableWhenSetMsg))
		}
		if !semanticEqual(n.Data, o.Data) || len(n.StringData) > 0 {
			errs = append(errs, Forbidden(NewPath("data"), immutableWhenSetMsg))
		}
	}
	return errs
}

func validateConfigMapUpdate(n, o *ConfigMap) FieldErrors {
	var errs FieldErrors
	if o.Immutable != nil && *o.Immutable {
		if n.Immutable == nil || !*n.Immutable {
			errs = append(errs, Forbidden(NewPath("immutable"), immutableWhenSetMsg))
		}
		if !semanticEqual(n.Data, o.Data) {
			errs = append(errs, Forbidden(NewPath("data"), immutableWhenSetMsg))
		}
		if !semanticEqual(n.BinaryData, o.BinaryData) {
			errs = append(errs, Forbidden(NewPath("binaryData"), immutableWhenSetMsg))
		}
	}
	return errs
}

// validateSelectorUpdate keeps an apps/v1 workload's selector fixed.
func validateSelectorUpdate(n, o *LabelSelector) FieldErrors {
	if semanticEqual(n, o) {
		return nil
	}
	return FieldErrors{Invalid(NewPath("spec", "selector"), formatSelector(n), fieldImmutableErrorMsg)}
}
