package table

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func mustResource(t *testing.T, name string) api.ResourceInfo {
	t.Helper()
	r, ok := api.LookupResource(name)
	if !ok {
		t.Fatalf("LookupResource(%q) = false", name)
	}
	return r
}

// TestColumns pins every kind's columns to Kubernetes' (name, type,
// format, priority) in order.
func TestColumns(t *testing.T) {
	type c struct {
		name, typ, format string
		priority          int32
	}
	s := func(name string) c { return c{name, "string", "", 0} }
	i := func(name string) c { return c{name, "integer", "", 0} }
	w := func(name string) c { return c{name, "string", "", 1} }
	name := c{"Name", "string", "name", 0}
	tests := map[string][]c{
		"Pod":        {name, s("Ready"), s("Status"), s("Restarts"), s("Age"), w("IP"), w("Node"), w("Nominated Node"), w("Readiness Gates")},
		"Node":       {name, s("Status"), s("Roles"), s("Age"), s("Version"), w("Internal-IP"), w("External-IP"), w("OS-Image"), w("Kernel-Version"), w("Container-Runtime")},
		"Deployment": {name, s("Ready"), s("Up-to-date"), s("Available"), s("Age"), w("Containers"), w("Images"), w("Selector")},
		"DaemonSet":  {name, i("Desired"), i("Current"), i("Ready"), i("Up-to-date"), i("Available"), s("Node Selector"), s("Age"), w("Containers"), w("Images"), w("Selector")},
		"Event":      {s("Last Seen"), s("Type"), s("Reason"), s("Object"), w("Subobject"), w("Source"), s("Message"), w("First Seen"), w("Count"), {"Name", "string", "name", 1}},
		"Secret":     {name, s("Type"), s("Data"), s("Age")},
		"ConfigMap":  {name, s("Data"), s("Age")},
		"Namespace":  {name, s("Status"), s("Age")},
		"ReplicaSet": {name, i("Desired"), i("Current"), i("Ready"), s("Age"), w("Containers"), w("Images"), w("Selector")},
		"Job":        {name, s("Status"), s("Completions"), s("Duration"), s("Age"), w("Containers"), w("Images"), w("Selector")},
		"CronJob":    {name, s("Schedule"), s("Timezone"), {"Suspend", "boolean", "", 0}, i("Active"), s("Last Schedule"), s("Age"), w("Containers"), w("Images"), w("Selector")},

		"Service":       {name, s("Type"), s("Cluster-IP"), s("External-IP"), s("Port(s)"), s("Age"), w("Selector")},
		"Endpoints":     {name, s("Endpoints"), s("Age")},
		"EndpointSlice": {name, s("AddressType"), s("Ports"), s("Endpoints"), s("Age")},

		"ServiceAccount":        {name, s("Secrets"), s("Age")},
		"Role":                  {name, c{"Created At", "date", "", 0}},
		"ClusterRole":           {name, c{"Created At", "date", "", 0}},
		"RoleBinding":           {name, s("Role"), s("Age"), w("Users"), w("Groups"), w("ServiceAccounts")},
		"ClusterRoleBinding":    {name, s("Role"), s("Age"), w("Users"), w("Groups"), w("ServiceAccounts")},
		"PodDisruptionBudget":   {name, s("Min Available"), s("Max Unavailable"), i("Allowed Disruptions"), s("Age")},
		"StatefulSet":           {name, s("Ready"), s("Age"), w("Containers"), w("Images")},
		"PersistentVolumeClaim": {name, s("Status"), s("Volume"), s("Capacity"), s("Access Modes"), s("StorageClass"), s("VolumeAttributesClass"), s("Age"), w("VolumeMode")},
		"PersistentVolume":      {name, s("Capacity"), s("Access Modes"), s("Reclaim Policy"), s("Status"), s("Claim"), s("StorageClass"), s("VolumeAttributesClass"), s("Reason"), s("Age"), w("VolumeMode")},
		"StorageClass":          {name, s("Provisioner"), s("ReclaimPolicy"), s("VolumeBindingMode"), s("AllowVolumeExpansion"), s("Age")},
	}
	for _, res := range api.Resources() {
		want, ok := tests[res.Kind]
		if !ok {
			t.Errorf("no expected columns for %s; every served kind needs a table", res.Kind)
			continue
		}
		cols, ok := Columns(res.Kind)
		if !ok {
			t.Errorf("Columns(%q) = false", res.Kind)
			continue
		}
		var got []c
		for _, col := range cols {
			got = append(got, c{col.Name, col.Type, col.Format, col.Priority})
			if col.Description == "" {
				t.Errorf("Columns(%q): column %q has no description", res.Kind, col.Name)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Columns(%q) =\n%v\nwant\n%v", res.Kind, got, want)
		}
	}
	if _, ok := Columns("Widget"); ok {
		t.Error(`Columns("Widget") = true; want false`)
	}
	a, _ := Columns("Pod")
	a[0].Name = "changed"
	if b, _ := Columns("Pod"); b[0].Name != "Name" {
		t.Error("Columns returned a shared slice: a caller's change leaked into the next call")
	}
}

// TestForEveryResource checks that every kind's rows have exactly one
// cell per column, even for an empty object.
func TestForEveryResource(t *testing.T) {
	for _, res := range api.Resources() {
		obj := res.New()
		obj.GetObjectMeta().Name = "x"
		tbl, err := For(res, []api.Object{obj}, now)
		if err != nil {
			t.Errorf("For(%s) = %v", res.Resource, err)
			continue
		}
		if tbl.Kind != "Table" || tbl.APIVersion != "meta.k8s.io/v1" {
			t.Errorf("For(%s) kind/apiVersion = %s %s; want Table meta.k8s.io/v1", res.Resource, tbl.Kind, tbl.APIVersion)
		}
		if len(tbl.Rows) != 1 || len(tbl.Rows[0].Cells) != len(tbl.ColumnDefinitions) {
			t.Errorf("For(%s): %d rows, cells %v for %d columns; want 1 row with a cell per column", res.Resource, len(tbl.Rows), tbl.Rows, len(tbl.ColumnDefinitions))
		}
		for i, cell := range tbl.Rows[0].Cells {
			switch cell.(type) {
			case string, int64:
			default:
				t.Errorf("For(%s) cell %d = %T; want string or int64", res.Resource, i, cell)
			}
		}
	}
}

func TestForRows(t *testing.T) {
	replicas := int32(3)
	tests := []struct {
		resource string
		obj      api.Object
		want     []any
	}{
		{"pods", &api.Pod{
			ObjectMeta: meta("default", "web", 2*24*time.Hour+3*time.Hour),
			Spec:       api.PodSpec{NodeName: "node-1", Containers: []api.Container{{Name: "a"}, {Name: "b"}}},
			Status: api.PodStatus{Phase: api.PodRunning, Conditions: conds(api.PodReady), PodIPs: []api.PodIP{{IP: "10.42.0.5"}},
				ContainerStatuses: []api.ContainerStatus{
					{Name: "a", Ready: true, State: running(time.Hour)},
					{Name: "b", State: waiting("CrashLoopBackOff"), RestartCount: 3, LastTerminationState: terminated("Error", 1, 5*time.Minute)},
				}},
		}, []any{"web", "1/2", "CrashLoopBackOff", "3 (5m ago)", "2d3h", "10.42.0.5", "node-1", "<none>", "<none>"}},
		{"nodes", &api.Node{
			ObjectMeta: api.ObjectMeta{Name: "n1", CreationTimestamp: ago(90 * time.Second),
				Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
			Spec: api.NodeSpec{Unschedulable: true},
			Status: api.NodeStatus{Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}},
				Addresses: []api.NodeAddress{{Type: api.NodeInternalIP, Address: "192.168.1.10"}},
				NodeInfo:  api.NodeSystemInfo{KubeletVersion: "v1.32.0", OSImage: "Ubuntu"}},
		}, []any{"n1", "Ready,SchedulingDisabled", "control-plane,worker", "90s", "v1.32.0", "192.168.1.10", "<none>", "Ubuntu", "<unknown>", "<unknown>"}},
		{"deployments", &api.Deployment{
			ObjectMeta: meta("default", "web", 7*time.Hour),
			Spec: api.DeploymentSpec{Replicas: &replicas, Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: api.PodTemplateSpec{Spec: api.PodSpec{Containers: []api.Container{{Name: "nginx", Image: "nginx:1.27"}, {Name: "s", Image: "busybox"}}}}},
			Status: api.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
		}, []any{"web", "2/3", int64(3), int64(2), "7h", "nginx,s", "nginx:1.27,busybox", "app=web"}},
		{"daemonsets", &api.DaemonSet{
			ObjectMeta: meta("kube-system", "agent", 30*24*time.Hour),
			Spec: api.DaemonSetSpec{Template: api.PodTemplateSpec{Spec: api.PodSpec{
				NodeSelector: map[string]string{"b": "2", "a": "1"}, Containers: []api.Container{{Name: "c", Image: "i"}}}}},
			Status: api.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2},
		}, []any{"agent", int64(3), int64(3), int64(2), int64(1), int64(2), "a=1,b=2", "30d", "c", "i", "<none>"}},
		{"events", &api.Event{
			ObjectMeta:     meta("default", "crashy.17f2", 3*time.Minute),
			InvolvedObject: api.ObjectReference{Kind: "Pod", Name: "crashy", FieldPath: "spec.containers{app}"},
			Reason:         "BackOff", Message: "Back-off restarting\n", Type: "Warning",
			Source:         api.EventSource{Component: "agent", Host: "node-1"},
			FirstTimestamp: ago(3 * time.Minute), LastTimestamp: ago(20 * time.Second), Count: 5,
		}, []any{"20s", "Warning", "BackOff", "pod/crashy", "spec.containers{app}", "agent, node-1", "Back-off restarting", "3m", int64(5), "crashy.17f2"}},
		{"events", &api.Event{
			ObjectMeta: meta("default", "new", time.Minute), InvolvedObject: api.ObjectReference{Kind: "Node"},
			EventTime: api.MicroTime{Time: now.Add(-40 * time.Second)}, ReportingController: "ctl",
		}, []any{"40s", "", "", "node", "", "ctl", "", "40s", int64(1), "new"}},
		{"secrets", &api.Secret{ObjectMeta: meta("default", "s", 9*time.Hour), Type: "Opaque",
			Data: map[string][]byte{"a": nil, "b": nil}}, []any{"s", "Opaque", int64(2), "9h"}},
		{"configmaps", &api.ConfigMap{ObjectMeta: meta("default", "c", 15*time.Minute),
			Data: map[string]string{"a": ""}, BinaryData: map[string][]byte{"b": nil}}, []any{"c", int64(2), "15m"}},
		{"namespaces", &api.Namespace{ObjectMeta: meta("", "scratch", 0), Status: api.NamespaceStatus{Phase: "Terminating"}},
			[]any{"scratch", "Terminating", "0s"}},
		{"services", &api.Service{ObjectMeta: meta("default", "web", time.Hour), Spec: api.ServiceSpec{
			Type: api.ServiceTypeNodePort, ClusterIP: "10.43.0.7", Selector: map[string]string{"app": "web"},
			Ports: []api.ServicePort{{Port: 80, NodePort: 30080, Protocol: api.ProtocolTCP}, {Port: 53, Protocol: api.ProtocolUDP}},
		}}, []any{"web", "NodePort", "10.43.0.7", "<none>", "80:30080/TCP,53/UDP", "60m", "app=web"}},
		{"services", &api.Service{ObjectMeta: meta("default", "lb", time.Hour), Spec: api.ServiceSpec{
			Type: api.ServiceTypeLoadBalancer, ClusterIP: "10.43.0.8", Ports: []api.ServicePort{{Port: 443, NodePort: 30443, Protocol: api.ProtocolTCP}},
		}}, []any{"lb", "LoadBalancer", "10.43.0.8", "<pending>", "443:30443/TCP", "60m", "<none>"}},
		{"services", &api.Service{ObjectMeta: meta("default", "db", time.Hour), Spec: api.ServiceSpec{
			Type: api.ServiceTypeClusterIP, ClusterIP: "None",
		}}, []any{"db", "ClusterIP", "None", "<none>", "<none>", "60m", "<none>"}},
		{"endpoints", &api.Endpoints{ObjectMeta: meta("default", "web", time.Minute), Subsets: []api.EndpointSubset{{
			Addresses: []api.EndpointAddress{{IP: "10.42.0.2"}, {IP: "10.42.0.3"}, {IP: "10.42.1.2"}, {IP: "10.42.1.3"}},
			Ports:     []api.EndpointPort{{Port: ptr(int32(80))}},
		}}}, []any{"web", "10.42.0.2:80,10.42.0.3:80,10.42.1.2:80 + 1 more...", "60s"}},
		{"endpoints", &api.Endpoints{ObjectMeta: meta("default", "none", time.Minute)}, []any{"none", "<none>", "60s"}},
		{"endpointslices", &api.EndpointSlice{ObjectMeta: meta("default", "web-x1", time.Minute), AddressType: "IPv4",
			Ports:     []api.EndpointPort{{Port: ptr(int32(80))}, {Port: ptr(int32(53))}},
			Endpoints: []api.Endpoint{{Addresses: []string{"10.42.0.2"}}, {Addresses: []string{"10.42.0.3"}}},
		}, []any{"web-x1", "IPv4", "80,53", "10.42.0.2,10.42.0.3", "60s"}},
		{"endpointslices", &api.EndpointSlice{ObjectMeta: meta("default", "empty", time.Minute), AddressType: "IPv4"},
			[]any{"empty", "IPv4", "<unset>", "<unset>", "60s"}},
		{"rolebindings", &api.RoleBinding{ObjectMeta: meta("team", "rb", time.Hour),
			RoleRef:  api.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []api.Subject{{Kind: "ServiceAccount", Name: "alice", Namespace: "team"}, {Kind: "User", Name: "bob"}, {Kind: "Group", Name: "ops"}}},
			[]any{"rb", "ClusterRole/view", "60m", "bob", "ops", "team/alice"}},
	}
	for _, tc := range tests {
		tbl, err := For(mustResource(t, tc.resource), []api.Object{tc.obj}, now)
		if err != nil {
			t.Errorf("For(%s) = %v", tc.resource, err)
			continue
		}
		if got := tbl.Rows[0].Cells; !reflect.DeepEqual(got, tc.want) {
			t.Errorf("For(%s %s) cells = %#v; want %#v", tc.resource, tc.obj.GetObjectMeta().Name, got, tc.want)
		}
		row, err := Row(tc.obj, now)
		if err != nil || !reflect.DeepEqual(row, tbl.Rows[0]) {
			t.Errorf("Row(%s) = %v, %v; want the row For made", tc.resource, row, err)
		}
	}
}

func TestPodRowConditions(t *testing.T) {
	tests := []struct {
		phase      api.PodPhase
		wantReason string
	}{
		{api.PodSucceeded, "Succeeded"},
		{api.PodFailed, "Failed"},
		{api.PodRunning, ""},
		{api.PodPending, ""},
	}
	for _, tc := range tests {
		row, err := Row(&api.Pod{Status: api.PodStatus{Phase: tc.phase}}, now)
		if err != nil {
			t.Fatal(err)
		}
		var reason string
		if len(row.Conditions) > 0 {
			c := row.Conditions[0]
			if c.Type != "Completed" || c.Status != "True" {
				t.Errorf("Row(%s pod).Conditions = %+v; want type Completed status True", tc.phase, row.Conditions)
			}
			reason = c.Reason
		}
		if reason != tc.wantReason {
			t.Errorf("Row(%s pod) condition reason = %q; want %q", tc.phase, reason, tc.wantReason)
		}
	}
}

func TestForErrors(t *testing.T) {
	pods := mustResource(t, "pods")
	if _, err := For(pods, []api.Object{&api.Node{}}, now); err == nil {
		t.Error("For(pods, a Node) = nil error; want a type error")
	}
	if _, err := For(pods, []api.Object{nil}, now); err == nil {
		t.Error("For(pods, nil) = nil error; want an error")
	}
	var nilPod *api.Pod
	if _, err := For(pods, []api.Object{nilPod}, now); err == nil {
		t.Error("For(pods, (*Pod)(nil)) = nil error; want an error")
	}
	if _, err := For(api.ResourceInfo{Kind: "Widget", Resource: "widgets"}, nil, now); err == nil {
		t.Error("For(widgets) = nil error; want an error")
	}
	if _, err := Row(nil, now); err == nil {
		t.Error("Row(nil) = nil error; want an error")
	}
	tbl, err := For(pods, nil, now)
	if err != nil || tbl.Rows == nil || len(tbl.Rows) != 0 || len(tbl.ColumnDefinitions) != 9 {
		t.Errorf("For(pods, none) = %+v, %v; want columns and an empty, non-nil rows", tbl, err)
	}
}

// TestTableJSON pins the wire shape kubectl decodes: Kubernetes' field
// names, rows as [] (never null), every column field present.
func TestTableJSON(t *testing.T) {
	tbl, err := For(mustResource(t, "namespaces"), nil, now)
	if err != nil {
		t.Fatal(err)
	}
	tbl.ResourceVersion = "42"
	b, err := json.Marshal(tbl)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"meta.k8s.io/v1","kind":"Table","metadata":{"resourceVersion":"42"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"`
	if !strings.HasPrefix(string(b), want) || !strings.HasSuffix(string(b), `"priority":0}],"rows":[]}`) {
		t.Errorf("json.Marshal(table) = %s; want prefix %s and empty rows", b, want)
	}
}

func ptr[T any](v T) *T { return &v }
