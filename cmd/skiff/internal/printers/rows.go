package printers

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/labels"
)

// Node role labels, as kubectl reads them.
const (
	nodeRolePrefix = "node-role.kubernetes.io/"
	nodeRoleLabel  = "kubernetes.io/role"
)

// nodeStatus is "Ready", "NotReady" or "Unknown" (no Ready condition),
// plus ",SchedulingDisabled" for a cordoned node.
func nodeStatus(n *api.Node) string {
	status := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type != api.NodeReady {
			continue
		}
		status = "NotReady"
		if c.Status == api.ConditionTrue {
			status = "Ready"
		}
	}
	if n.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles lists the roles in node-role.kubernetes.io/<role> and
// kubernetes.io/role labels, sorted, or nil.
func nodeRoles(n *api.Node) []string {
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, nodeRolePrefix):
			if r := strings.TrimPrefix(k, nodeRolePrefix); r != "" {
				roles = append(roles, r)
			}
		case k == nodeRoleLabel && v != "":
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

// nodeAddress is the first address of type typ, or "<none>".
func nodeAddress(n *api.Node, typ string) string {
	for _, a := range n.Status.Addresses {
		if a.Type == typ {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

func nodeRow(n *api.Node, now time.Time, wide bool) []string {
	roles := strings.Join(nodeRoles(n), ",")
	row := []string{n.Name, nodeStatus(n), orNone(roles), age(n.CreationTimestamp.Time, now), n.Status.NodeInfo.KubeletVersion}
	if !wide {
		return row
	}
	info := n.Status.NodeInfo
	return append(row, nodeAddress(n, api.NodeInternalIP), nodeAddress(n, api.NodeExternalIP),
		orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion))
}

// desiredReplicas is spec.replicas, defaulting to 1 as the API does.
func desiredReplicas(d *api.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func itoa[T ~int32 | ~int64 | ~int](v T) string { return strconv.FormatInt(int64(v), 10) }

func deploymentRow(d *api.Deployment, now time.Time, wide bool) []string {
	row := []string{d.Name, itoa(d.Status.ReadyReplicas) + "/" + itoa(desiredReplicas(d)),
		itoa(d.Status.UpdatedReplicas), itoa(d.Status.AvailableReplicas), age(d.CreationTimestamp.Time, now)}
	if !wide {
		return row
	}
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return append(row, names, images, selectorString(d.Spec.Selector))
}

func daemonSetRow(ds *api.DaemonSet, now time.Time, wide bool) []string {
	st := ds.Status
	row := []string{ds.Name, itoa(st.DesiredNumberScheduled), itoa(st.CurrentNumberScheduled), itoa(st.NumberReady),
		itoa(st.UpdatedNumberScheduled), itoa(st.NumberAvailable), formatLabels(ds.Spec.Template.Spec.NodeSelector),
		age(ds.CreationTimestamp.Time, now)}
	if !wide {
		return row
	}
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	return append(row, names, images, selectorString(ds.Spec.Selector))
}

// containerCells joins container names and images with commas.
func containerCells(cs []api.Container) (names, images string) {
	n := make([]string, len(cs))
	im := make([]string, len(cs))
	for i, c := range cs {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// selectorString renders a label selector in selector syntax ("app=web"),
// "<none>" when absent or empty, "<invalid>" when it does not convert.
func selectorString(ls *api.LabelSelector) string {
	if ls == nil {
		return "<none>"
	}
	sel, err := ls.AsSelector()
	if err != nil {
		return "<invalid>"
	}
	return orNone(sel.String())
}

// formatLabels is "k1=v1,k2=v2" sorted by key, or "<none>".
func formatLabels(m map[string]string) string {
	return orNone(labels.Set(m).String())
}

// eventTimes returns the FIRST SEEN and LAST SEEN cells and the count of
// an event, as kubectl computes them (eventTime for new-style events,
// count 1 when unset).
func eventTimes(e *api.Event, now time.Time) (first, last string, count int32) {
	first = age(e.FirstTimestamp.Time, now)
	if e.FirstTimestamp.IsZero() {
		first = age(e.EventTime.Time, now)
	}
	last = age(e.LastTimestamp.Time, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count = e.Count
	if count == 0 {
		count = 1
	}
	return first, last, count
}

// eventObject is "kind/name" with the kind lower-cased ("pod/web-1").
func eventObject(e *api.Event) string {
	kind := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name == "" {
		return kind
	}
	return kind + "/" + e.InvolvedObject.Name
}

// eventSource is "component, host", falling back to the reporting fields.
func eventSource(e *api.Event) string {
	component, host := e.Source.Component, e.Source.Host
	if component == "" {
		component = e.ReportingController
	}
	if host == "" {
		host = e.ReportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}

func eventRow(e *api.Event, now time.Time, wide bool) []string {
	first, last, count := eventTimes(e, now)
	msg := strings.TrimSpace(e.Message)
	if !wide {
		return []string{last, e.Type, e.Reason, eventObject(e), msg}
	}
	return []string{last, e.Type, e.Reason, eventObject(e), e.InvolvedObject.FieldPath, eventSource(e), msg, first, itoa(count), e.Name}
}

func secretRow(s *api.Secret, now time.Time, _ bool) []string {
	return []string{s.Name, s.Type, strconv.Itoa(len(s.Data)), age(s.CreationTimestamp.Time, now)}
}

func configMapRow(c *api.ConfigMap, now time.Time, _ bool) []string {
	return []string{c.Name, strconv.Itoa(len(c.Data) + len(c.BinaryData)), age(c.CreationTimestamp.Time, now)}
}

func namespaceRow(ns *api.Namespace, now time.Time, _ bool) []string {
	return []string{ns.Name, ns.Status.Phase, age(ns.CreationTimestamp.Time, now)}
}
