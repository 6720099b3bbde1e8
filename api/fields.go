package api

import (
	"strconv"

	"github.com/skiffhq/skiff/api/fields"
)

// SelectableFields returns the fields of obj that a fieldSelector may name,
// as Kubernetes offers them: metadata.name and metadata.namespace for all
// kinds, plus per kind spec.nodeName, status.phase, involvedObject.* and so on.
func SelectableFields(obj Object) fields.Set {
	m := obj.GetObjectMeta()
	s := fields.Set{"metadata.name": m.Name}
	if r, ok := ResourceOf(obj); ok && r.Namespaced {
		s["metadata.namespace"] = m.Namespace
	}
	switch o := obj.(type) {
	case *Pod:
		s["spec.nodeName"] = o.Spec.NodeName
		s["spec.restartPolicy"] = string(o.Spec.RestartPolicy)
		s["spec.schedulerName"] = o.Spec.SchedulerName
		s["status.phase"] = string(o.Status.Phase)
		s["status.podIP"] = o.Status.PodIP
		s["status.nominatedNodeName"] = o.Status.NominatedNodeName
	case *Node:
		s["spec.unschedulable"] = strconv.FormatBool(o.Spec.Unschedulable)
	case *Event:
		s["involvedObject.kind"] = o.InvolvedObject.Kind
		s["involvedObject.namespace"] = o.InvolvedObject.Namespace
		s["involvedObject.name"] = o.InvolvedObject.Name
		s["involvedObject.uid"] = o.InvolvedObject.UID
		s["involvedObject.apiVersion"] = o.InvolvedObject.APIVersion
		s["involvedObject.resourceVersion"] = o.InvolvedObject.ResourceVersion
		s["involvedObject.fieldPath"] = o.InvolvedObject.FieldPath
		s["reason"] = o.Reason
		s["source"] = o.Source.Component
		s["type"] = o.Type
	case *Secret:
		s["type"] = o.Type
	case *Namespace:
		s["status.phase"] = o.Status.Phase
	}
	return s
}
