package table

import (
	"slices"
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

// NodeRoles lists the roles in n's node-role.kubernetes.io/<role> and
// kubernetes.io/role labels, sorted and without duplicates, or nil.
func NodeRoles(n *api.Node) []string {
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
	return none
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// nodeRow is NAME STATUS ROLES AGE VERSION | INTERNAL-IP EXTERNAL-IP
// OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME.
func nodeRow(n *api.Node, now time.Time) api.TableRow {
	info := n.Status.NodeInfo
	return api.TableRow{Cells: []any{
		n.Name, nodeStatus(n), OrNone(strings.Join(NodeRoles(n), ",")), Age(n.CreationTimestamp.Time, now), info.KubeletVersion,
		nodeAddress(n, api.NodeInternalIP), nodeAddress(n, api.NodeExternalIP),
		orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion),
	}}
}

// DesiredReplicas is d's spec.replicas, defaulting to 1 as the API does.
func DesiredReplicas(d *api.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// deploymentRow is NAME READY UP-TO-DATE AVAILABLE AGE | CONTAINERS
// IMAGES SELECTOR, with the counts as integers.
func deploymentRow(d *api.Deployment, now time.Time) api.TableRow {
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return api.TableRow{Cells: []any{
		d.Name, itoa(d.Status.ReadyReplicas) + "/" + itoa(DesiredReplicas(d)),
		int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), Age(d.CreationTimestamp.Time, now),
		names, images, SelectorString(d.Spec.Selector),
	}}
}

// daemonSetRow is NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE
// NODE-SELECTOR AGE | CONTAINERS IMAGES SELECTOR.
func daemonSetRow(ds *api.DaemonSet, now time.Time) api.TableRow {
	st := ds.Status
	names, images := containerCells(ds.Spec.Template.Spec.Containers)
	return api.TableRow{Cells: []any{
		ds.Name, int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable), FormatLabels(ds.Spec.Template.Spec.NodeSelector),
		Age(ds.CreationTimestamp.Time, now),
		names, images, SelectorString(ds.Spec.Selector),
	}}
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

// SelectorString renders a label selector in selector syntax ("app=web"),
// "<none>" when absent or empty, "<invalid>" when it does not convert.
func SelectorString(ls *api.LabelSelector) string {
	if ls == nil {
		return none
	}
	sel, err := ls.AsSelector()
	if err != nil {
		return "<invalid>"
	}
	return OrNone(sel.String())
}

// FormatLabels is "k1=v1,k2=v2" sorted by key, or "<none>".
func FormatLabels(m map[string]string) string {
	return OrNone(labels.Set(m).String())
}

// EventTimes returns the FIRST SEEN and LAST SEEN cells and the count of
// an event, as kubectl computes them (eventTime for new-style events,
// count 1 when unset).
func EventTimes(e *api.Event, now time.Time) (first, last string, count int32) {
	first = Age(e.FirstTimestamp.Time, now)
	if e.FirstTimestamp.IsZero() {
		first = Age(e.EventTime.Time, now)
	}
	last = Age(e.LastTimestamp.Time, now)
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

// EventSource is "component, host", falling back to the reporting
// fields of new-style events.
func EventSource(e *api.Event) string {
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

// eventRow is LAST-SEEN TYPE REASON OBJECT SUBOBJECT* SOURCE* MESSAGE
// FIRST-SEEN* COUNT* NAME* (* = wide only): the wide columns interleave,
// as in Kubernetes.
func eventRow(e *api.Event, now time.Time) api.TableRow {
	first, last, count := EventTimes(e, now)
	return api.TableRow{Cells: []any{
		last, e.Type, e.Reason, eventObject(e), e.InvolvedObject.FieldPath, EventSource(e),
		strings.TrimSpace(e.Message), first, int64(count), e.Name,
	}}
}

func secretRow(s *api.Secret, now time.Time) api.TableRow {
	return api.TableRow{Cells: []any{s.Name, s.Type, int64(len(s.Data)), Age(s.CreationTimestamp.Time, now)}}
}

func configMapRow(c *api.ConfigMap, now time.Time) api.TableRow {
	return api.TableRow{Cells: []any{c.Name, int64(len(c.Data) + len(c.BinaryData)), Age(c.CreationTimestamp.Time, now)}}
}

func namespaceRow(ns *api.Namespace, now time.Time) api.TableRow {
	return api.TableRow{Cells: []any{ns.Name, ns.Status.Phase, Age(ns.CreationTimestamp.Time, now)}}
}
