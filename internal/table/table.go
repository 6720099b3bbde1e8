package table

import (
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/api"
)

// Wide is the priority of the columns kubectl shows only with -o wide.
const Wide = 1

// Columns returns the column definitions of kind's table, the -o wide
// ones (priority Wide) included, in Kubernetes' order. The slice is new
// on every call; ok is false for a kind without a table.
func Columns(kind string) (cols []api.TableColumnDefinition, ok bool) {
	l, ok := layoutFor(kind)
	return l.columns, ok
}

// Row returns obj's row: one cell per column of its kind (wide ones
// included), ages measured from now, and the row conditions Kubernetes
// sets. Object is left empty for the caller. A type without a table is
// an error.
func Row(obj api.Object, now time.Time) (api.TableRow, error) {
	res, ok := api.ResourceOf(obj)
	if !ok {
		return api.TableRow{}, fmt.Errorf("table: no table for %T", obj)
	}
	l, _ := layoutFor(res.Kind)
	return l.row(obj, now)
}

// For renders objs, all of res's kind, as the Table kube-apiserver
// serves: apiVersion meta.k8s.io/v1, every column including the wide
// ones, one row per object in order, rows' Object left empty. An empty
// objs gives a table with columns and no rows. An object of another type
// is an error.
func For(res api.ResourceInfo, objs []api.Object, now time.Time) (*api.Table, error) {
	l, ok := layoutFor(res.Kind)
	if !ok {
		return nil, fmt.Errorf("table: no table for %q", res.Resource)
	}
	t := &api.Table{
		TypeMeta:          api.TypeMeta{APIVersion: api.MetaV1, Kind: api.KindTable},
		ColumnDefinitions: l.columns,
		Rows:              make([]api.TableRow, 0, len(objs)),
	}
	for _, obj := range objs {
		row, err := l.row(obj, now)
		if err != nil {
			return nil, err
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// layout is one kind's columns and the function that fills them.
type layout struct {
	columns []api.TableColumnDefinition
	row     func(obj api.Object, now time.Time) (api.TableRow, error)
}

// Column descriptions that recur across kinds.
const (
	descName       = "Name of the object, unique within its namespace (or the cluster, for cluster-scoped kinds)."
	descAge        = "Time since the object was created."
	descContainers = "Names of each container in the template."
	descImages     = "Images referenced by each container in the template."
)

func col(name, typ, desc string) api.TableColumnDefinition {
	return api.TableColumnDefinition{Name: name, Type: typ, Description: desc}
}

func wide(name, typ, desc string) api.TableColumnDefinition {
	return api.TableColumnDefinition{Name: name, Type: typ, Description: desc, Priority: Wide}
}

func nameCol() api.TableColumnDefinition {
	return api.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: descName}
}

// layoutFor returns the table of kind. Names, order, types and
// priorities are those of Kubernetes' pkg/printers/internalversion, so
// kubectl renders skiff's tables as it renders a real cluster's.
func layoutFor(kind string) (layout, bool) {
	switch kind {
	case "Pod":
		return layout{row: typed(podRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
			col("Status", "string", "The aggregate status of the containers in this pod."),
			col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
			col("Age", "string", descAge),
			wide("IP", "string", "The pod's IP address."),
			wide("Node", "string", "The node the pod is bound to."),
			wide("Nominated Node", "string", "The node the scheduler nominated for this pod."),
			wide("Readiness Gates", "string", "Readiness gates that are true, of all the pod's readiness gates."),
		}}, true
	case "Node":
		return layout{row: typed(nodeRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Status", "string", "The status of the node"),
			col("Roles", "string", "The roles of the node"),
			col("Age", "string", descAge),
			col("Version", "string", "Version of the node agent."),
			wide("Internal-IP", "string", "The node's first InternalIP address."),
			wide("External-IP", "string", "The node's first ExternalIP address."),
			wide("OS-Image", "string", "OS image the node reports."),
			wide("Kernel-Version", "string", "Kernel version the node reports."),
			wide("Container-Runtime", "string", "Container runtime and version the node reports."),
		}}, true
	case "Deployment":
		return layout{row: typed(deploymentRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Ready", "string", "Number of the pod with ready state"),
			col("Up-to-date", "string", "Total number of pods targeted by this deployment that have the desired template."),
			col("Available", "string", "Total number of available pods targeted by this deployment."),
			col("Age", "string", descAge),
			wide("Containers", "string", descContainers),
			wide("Images", "string", descImages),
			wide("Selector", "string", "Label selector for the deployment's pods."),
		}}, true
	case "DaemonSet":
		return layout{row: typed(daemonSetRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Desired", "integer", "The number of nodes that should be running the daemon pod."),
			col("Current", "integer", "The number of nodes running at least one daemon pod that are supposed to."),
			col("Ready", "integer", "The number of nodes running a ready daemon pod."),
			col("Up-to-date", "integer", "The number of nodes running the updated daemon pod."),
			col("Available", "integer", "The number of nodes running an available daemon pod."),
			col("Node Selector", "string", "The pod template's node selector."),
			col("Age", "string", descAge),
			wide("Containers", "string", descContainers),
			wide("Images", "string", descImages),
			wide("Selector", "string", "Label selector for the daemon set's pods."),
		}}, true
	case "Event":
		name := nameCol()
		name.Priority = Wide
		return layout{row: typed(eventRow), columns: []api.TableColumnDefinition{
			col("Last Seen", "string", "Time since the event was last observed."),
			col("Type", "string", "Type of this event (Normal, Warning)."),
			col("Reason", "string", "Short, machine-understandable reason for the event."),
			col("Object", "string", "The object this event is about."),
			wide("Subobject", "string", "The part of the object the event is about (fieldPath)."),
			wide("Source", "string", "The component reporting this event."),
			col("Message", "string", "Human-readable description of the event."),
			wide("First Seen", "string", "Time since the event was first observed."),
			wide("Count", "string", "The number of times this event has occurred."),
			name,
		}}, true
	case "Secret":
		return layout{row: typed(secretRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Type", "string", "Used to facilitate programmatic handling of secret data."),
			col("Data", "string", "Number of keys in the secret's data."),
			col("Age", "string", descAge),
		}}, true
	case "ConfigMap":
		return layout{row: typed(configMapRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Data", "string", "Number of keys in the config map's data and binaryData."),
			col("Age", "string", descAge),
		}}, true
	case "Namespace":
		return layout{row: typed(namespaceRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Status", "string", "The status of the namespace"),
			col("Age", "string", descAge),
		}}, true
	}
	if l, ok := workloadLayout(kind); ok {
		return l, true
	}
	if l, ok := storageLayout(kind); ok {
		return l, true
	}
	if l, ok := serviceLayout(kind); ok {
		return l, true
	}
	return rbacLayoutFor(kind)
}

// typed adapts a row function of one concrete type to layout.row,
// rejecting nil and objects of any other type.
func typed[T api.Object](f func(T, time.Time) api.TableRow) func(api.Object, time.Time) (api.TableRow, error) {
	return func(obj api.Object, now time.Time) (api.TableRow, error) {
		t, ok := obj.(T)
		if !ok || reflect.ValueOf(t).IsNil() {
			var want T
			return api.TableRow{}, fmt.Errorf("table: got %T, want %T", obj, want)
		}
		return f(t, now), nil
	}
}

func itoa[T ~int32 | ~int64 | ~int](v T) string { return strconv.FormatInt(int64(v), 10) }
