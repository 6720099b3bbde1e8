package scheduler

import (
	"slices"
	"testing"

	"github.com/skiffhq/skiff/api"
	st "github.com/skiffhq/skiff/server/scheduler/schedtest"
)

type filterCase struct {
	name string
	pod  *api.Pod
	node *api.Node
	on   []*api.Pod // pods already bound to the node
	want []Reason
}

func runFilter(t *testing.T, f func(*PodInfo, *NodeInfo, []Reason) []Reason, cases []filterCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range tc.on {
				p.Spec.NodeName = tc.node.Name
			}
			snap := NewSnapshot([]*api.Node{tc.node}, tc.on)
			got := f(NewPodInfo(tc.pod), snap.Nodes[0], nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("filter(%s, %s) = %v; want %v", tc.pod.Name, tc.node.Name, got, tc.want)
			}
		})
	}
}

func TestFilterNodeName(t *testing.T) {
	runFilter(t, filterNodeName, []filterCase{
		{"unset", st.Pod("p", "", ""), st.Node("n1", "1", "1Gi"), nil, nil},
		{"same", st.Pod("p", "", "", st.OnNode("n1")), st.Node("n1", "1", "1Gi"), nil, nil},
		{"other", st.Pod("p", "", "", st.OnNode("n2")), st.Node("n1", "1", "1Gi"), nil, []Reason{{Code: ReasonNodeName}}},
	})
}

func TestFilterUnschedulableAndReady(t *testing.T) {
	runFilter(t, filterUnschedulable, []filterCase{
		{"schedulable", st.Pod("p", "", ""), st.Node("n", "1", "1Gi"), nil, nil},
		{"cordoned", st.Pod("p", "", ""), st.Node("n", "1", "1Gi", st.Unschedulable()), nil, []Reason{{Code: ReasonUnschedulable}}},
		{"cordoned tolerated", st.Pod("p", "", "", st.Tolerate(TaintUnschedulable, "Exists", "", "NoSchedule")),
			st.Node("n", "1", "1Gi", st.Unschedulable()), nil, nil},
	})
	runFilter(t, filterReady, []filterCase{
		{"ready", st.Pod("p", "", ""), st.Node("n", "1", "1Gi"), nil, nil},
		{"not ready", st.Pod("p", "", ""), st.Node("n", "1", "1Gi", st.Condition(api.NodeReady, api.ConditionFalse)), nil, []Reason{{Code: ReasonNotReady}}},
		{"unknown", st.Pod("p", "", ""), st.Node("n", "1", "1Gi", st.Condition(api.NodeReady, api.ConditionUnknown)), nil, []Reason{{Code: ReasonNotReady}}},
		{"not ready tolerated", st.Pod("p", "", "", st.Tolerate(TaintNotReady, "Exists", "", "")),
			st.Node("n", "1", "1Gi", st.Condition(api.NodeReady, api.ConditionFalse)), nil, nil},
	})
}

func TestFilterTaints(t *testing.T) {
	gpu := st.Node("n", "1", "1Gi", st.Taint("dedicated", "gpu", "NoSchedule"))
	exec := st.Node("n", "1", "1Gi", st.Taint("dedicated", "gpu", "NoExecute"))
	soft := st.Node("n", "1", "1Gi", st.Taint("dedicated", "gpu", "PreferNoSchedule"))
	untolerated := []Reason{{Code: ReasonUntoleratedTaint, Key: "dedicated", Value: "gpu"}}
	runFilter(t, filterTaints, []filterCase{
		{"no toleration", st.Pod("p", "", ""), gpu, nil, untolerated},
		{"NoExecute", st.Pod("p", "", ""), exec, nil, untolerated},
		{"PreferNoSchedule is not a filter", st.Pod("p", "", ""), soft, nil, nil},
		{"Equal same value", st.Pod("p", "", "", st.Tolerate("dedicated", "Equal", "gpu", "NoSchedule")), gpu, nil, nil},
		{"default operator is Equal", st.Pod("p", "", "", st.Tolerate("dedicated", "", "gpu", "")), gpu, nil, nil},
		{"Equal other value", st.Pod("p", "", "", st.Tolerate("dedicated", "Equal", "tpu", "NoSchedule")), gpu, nil, untolerated},
		{"Exists any value", st.Pod("p", "", "", st.Tolerate("dedicated", "Exists", "", "NoSchedule")), gpu, nil, nil},
		{"other effect", st.Pod("p", "", "", st.Tolerate("dedicated", "Exists", "", "NoExecute")), gpu, nil, untolerated},
		{"empty effect matches all", st.Pod("p", "", "", st.Tolerate("dedicated", "Exists", "", "")), exec, nil, nil},
		{"empty key Exists tolerates all", st.Pod("p", "", "", st.Tolerate("", "Exists", "", "")), exec, nil, nil},
		{"empty key Equal tolerates nothing", st.Pod("p", "", "", st.Tolerate("", "Equal", "", "")), gpu, nil, untolerated},
	})
}

func TestFilterPressure(t *testing.T) {
	mem := st.Node("n", "4", "8Gi", st.Condition(api.NodeMemoryPressure, api.ConditionTrue))
	disk := st.Node("n", "4", "8Gi", st.Condition(api.NodeDiskPressure, api.ConditionTrue))
	pid := st.Node("n", "4", "8Gi", st.Condition(api.NodePIDPressure, api.ConditionTrue))
	runFilter(t, filterPressure, []filterCase{
		{"memory pressure BestEffort", st.Pod("p", "", ""), mem, nil, []Reason{{Code: ReasonMemoryPressure}}},
		{"memory pressure Burstable", st.Pod("p", "100m", ""), mem, nil, nil},
		{"memory pressure tolerated", st.Pod("p", "", "", st.Tolerate(TaintMemoryPressure, "Exists", "", "NoSchedule")), mem, nil, nil},
		{"disk pressure rejects all", st.Pod("p", "1", "1Gi"), disk, nil, []Reason{{Code: ReasonDiskPressure}}},
		{"disk pressure tolerated", st.Pod("p", "1", "1Gi", st.Tolerate(TaintDiskPressure, "Exists", "", "")), disk, nil, nil},
		{"pid pressure", st.Pod("p", "1", "1Gi"), pid, nil, []Reason{{Code: ReasonPIDPressure}}},
	})
}

func TestFilterAffinity(t *testing.T) {
	n := st.Node("n", "1", "1Gi", st.Labels("zone", "a", "gen", "5"))
	miss := []Reason{{Code: ReasonAffinity}}
	runFilter(t, filterAffinity, []filterCase{
		{"none", st.Pod("p", "", ""), n, nil, nil},
		{"selector match", st.Pod("p", "", "", st.NodeSelector("zone", "a")), n, nil, nil},
		{"selector miss", st.Pod("p", "", "", st.NodeSelector("zone", "b")), n, nil, miss},
		{"In", st.Pod("p", "", "", st.Required("zone", "In", "a", "b")), n, nil, nil},
		{"In miss", st.Pod("p", "", "", st.Required("zone", "In", "b")), n, nil, miss},
		{"NotIn", st.Pod("p", "", "", st.Required("zone", "NotIn", "b")), n, nil, nil},
		{"NotIn miss", st.Pod("p", "", "", st.Required("zone", "NotIn", "a")), n, nil, miss},
		{"Exists", st.Pod("p", "", "", st.Required("gen", "Exists")), n, nil, nil},
		{"DoesNotExist miss", st.Pod("p", "", "", st.Required("gen", "DoesNotExist")), n, nil, miss},
		{"DoesNotExist", st.Pod("p", "", "", st.Required("gpu", "DoesNotExist")), n, nil, nil},
		{"Gt", st.Pod("p", "", "", st.Required("gen", "Gt", "4")), n, nil, nil},
		{"Gt miss", st.Pod("p", "", "", st.Required("gen", "Gt", "5")), n, nil, miss},
		{"Lt", st.Pod("p", "", "", st.Required("gen", "Lt", "6")), n, nil, nil},
		{"Lt non-integer label", st.Pod("p", "", "", st.Required("zone", "Lt", "6")), n, nil, miss},
		{"terms are ORed", st.Pod("p", "", "", st.Required("zone", "In", "b"), st.Required("gen", "Exists")), n, nil, nil},
		{"selector and affinity both needed", st.Pod("p", "", "", st.NodeSelector("zone", "b"), st.Required("gen", "Exists")), n, nil, miss},
		{"bad operator matches nothing", st.Pod("p", "", "", st.Required("zone", "Like", "a")), n, nil, miss},
	})
}

func TestFilterAffinityMatchFields(t *testing.T) {
	p := st.Pod("p", "", "")
	p.Spec.Affinity = &api.Affinity{NodeAffinity: &api.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &api.NodeSelector{
		NodeSelectorTerms: []api.NodeSelectorTerm{{MatchFields: []api.NodeSelectorRequirement{{Key: "metadata.name", Operator: "In", Values: []string{"n1"}}}}},
	}}}
	runFilter(t, filterAffinity, []filterCase{
		{"name in", p, st.Node("n1", "1", "1Gi"), nil, nil},
		{"name not in", p, st.Node("n2", "1", "1Gi"), nil, []Reason{{Code: ReasonAffinity}}},
	})
}

func TestFilterPorts(t *testing.T) {
	n := st.Node("n", "4", "8Gi")
	udp := st.Pod("u", "", "")
	udp.Spec.Containers[0].Ports = []api.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: api.ProtocolUDP}}
	ip := st.Pod("i", "", "")
	ip.Spec.Containers[0].Ports = []api.ContainerPort{{ContainerPort: 80, HostPort: 80, HostIP: "10.0.0.1"}}
	ip2 := st.Pod("j", "", "")
	ip2.Spec.Containers[0].Ports = []api.ContainerPort{{ContainerPort: 80, HostPort: 80, HostIP: "10.0.0.2"}}
	hostNet := st.Pod("h", "", "")
	hostNet.Spec.HostNetwork = true
	hostNet.Spec.Containers[0].Ports = []api.ContainerPort{{ContainerPort: 80}}
	clash := []Reason{{Code: ReasonPorts}}
	runFilter(t, filterPorts, []filterCase{
		{"free", st.Pod("p", "", "", st.HostPort(80)), n, []*api.Pod{st.Pod("o", "", "", st.HostPort(81))}, nil},
		{"taken", st.Pod("p", "", "", st.HostPort(80)), n, []*api.Pod{st.Pod("o", "", "", st.HostPort(80))}, clash},
		{"other protocol", udp, n, []*api.Pod{st.Pod("o", "", "", st.HostPort(80))}, nil},
		{"different IPs", ip2, n, []*api.Pod{ip}, nil},
		{"wildcard against IP", st.Pod("p", "", "", st.HostPort(80)), n, []*api.Pod{ip}, clash},
		{"host network implies host port", hostNet, n, []*api.Pod{st.Pod("o", "", "", st.HostPort(80))}, clash},
	})
}

func TestFilterResources(t *testing.T) {
	n := st.Node("n", "2", "4Gi")
	small := st.Node("n", "2", "4Gi", st.MaxPods("1"))
	runFilter(t, filterResources, []filterCase{
		{"fits", st.Pod("p", "1", "1Gi"), n, []*api.Pod{st.Pod("o", "1", "3Gi")}, nil},
		{"cpu", st.Pod("p", "1500m", "1Gi"), n, []*api.Pod{st.Pod("o", "1", "1Gi")}, []Reason{{Code: ReasonInsufficient, Key: "cpu"}}},
		{"memory", st.Pod("p", "100m", "2Gi"), n, []*api.Pod{st.Pod("o", "1", "3Gi")}, []Reason{{Code: ReasonInsufficient, Key: "memory"}}},
		{"both", st.Pod("p", "2", "4Gi"), n, []*api.Pod{st.Pod("o", "1", "1Gi")},
			[]Reason{{Code: ReasonInsufficient, Key: "cpu"}, {Code: ReasonInsufficient, Key: "memory"}}},
		{"pods", st.Pod("p", "", ""), small, []*api.Pod{st.Pod("o", "", "")}, []Reason{{Code: ReasonTooManyPods}}},
		{"no requests fit a full node", st.Pod("p", "", ""), n, []*api.Pod{st.Pod("o", "2", "4Gi")}, nil},
		{"ephemeral storage", func() *api.Pod {
			p := st.Pod("p", "", "")
			p.Spec.Containers[0].Resources.Requests = api.ResourceList{api.ResourceEphemeralStorage: mustQ("200Gi")}
			return p
		}(), n, nil, []Reason{{Code: ReasonInsufficient, Key: "ephemeral-storage"}}},
	})
}

func TestFitErrorMessage(t *testing.T) {
	e := &FitError{NumNodes: 5, Reasons: map[Reason]int{
		{Code: ReasonInsufficient, Key: "memory"}:                      3,
		{Code: ReasonUntoleratedTaint, Key: "dedicated", Value: "gpu"}: 2,
	}}
	want := "0/5 nodes are available: 2 node(s) had untolerated taint {dedicated: gpu}, 3 Insufficient memory."
	if got := e.Error(); got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if got, want := (&FitError{NumNodes: 0}).Error(), "0/0 nodes are available."; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}
