package schedtest

import (
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
)

// Epoch is the creation time of fixtures unless set otherwise.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NodeOpt modifies a node fixture.
type NodeOpt func(*api.Node)

// Node returns a Ready node offering cpu and memory (Kubernetes quantity
// strings), 110 pods and 100Gi of ephemeral storage.
func Node(name, cpu, memory string, opts ...NodeOpt) *api.Node {
	n := &api.Node{
		ObjectMeta: api.ObjectMeta{Name: name, UID: "uid-" + name, CreationTimestamp: api.NewTime(Epoch)},
		Status: api.NodeStatus{
			Allocatable: api.ResourceList{
				api.ResourceCPU:              resource.MustParse(cpu),
				api.ResourceMemory:           resource.MustParse(memory),
				api.ResourcePods:             resource.MustParse("110"),
				api.ResourceEphemeralStorage: resource.MustParse("100Gi"),
			},
			Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// Labels sets node labels.
func Labels(kv ...string) NodeOpt {
	return func(n *api.Node) { n.Labels = pairs(kv) }
}

// Taint adds a taint.
func Taint(key, value, effect string) NodeOpt {
	return func(n *api.Node) {
		n.Spec.Taints = append(n.Spec.Taints, api.Taint{Key: key, Value: value, Effect: effect})
	}
}

// Condition sets a node condition's status.
func Condition(typ, status string) NodeOpt {
	return func(n *api.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == typ {
				n.Status.Conditions[i].Status = status
				return
			}
		}
		n.Status.Conditions = append(n.Status.Conditions, api.NodeCondition{Type: typ, Status: status})
	}
}

// Unschedulable cordons the node.
func Unschedulable() NodeOpt { return func(n *api.Node) { n.Spec.Unschedulable = true } }

// MaxPods sets the pods allocatable.
func MaxPods(v string) NodeOpt {
	return func(n *api.Node) { n.Status.Allocatable[api.ResourcePods] = resource.MustParse(v) }
}

// Images lists images present on the node.
func Images(size int64, names ...string) NodeOpt {
	return func(n *api.Node) {
		for _, name := range names {
			n.Status.Images = append(n.Status.Images, api.ContainerImage{Names: []string{name}, SizeBytes: size})
		}
	}
}

// PodOpt modifies a pod fixture.
type PodOpt func(*api.Pod)

// Pod returns a pending pod in namespace default with one container
// requesting cpu and memory ("" requests nothing).
func Pod(name, cpu, memory string, opts ...PodOpt) *api.Pod {
	req := api.ResourceList{}
	if cpu != "" {
		req[api.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		req[api.ResourceMemory] = resource.MustParse(memory)
	}
	p := &api.Pod{
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name, UID: "uid-" + name, CreationTimestamp: api.NewTime(Epoch)},
		Spec: api.PodSpec{Containers: []api.Container{{
			Name: "c", Image: "registry.local/app:1",
			Resources: api.ResourceRequirements{Requests: req},
		}}},
		Status: api.PodStatus{Phase: api.PodPending},
	}
	if len(req) == 0 {
		p.Spec.Containers[0].Resources = api.ResourceRequirements{}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// OnNode binds the pod.
func OnNode(node string) PodOpt { return func(p *api.Pod) { p.Spec.NodeName = node } }

// Priority sets spec.priority.
func Priority(v int32) PodOpt { return func(p *api.Pod) { p.Spec.Priority = &v } }

// Created sets the creation time.
func Created(t time.Time) PodOpt { return func(p *api.Pod) { p.CreationTimestamp = api.NewTime(t) } }

// NodeSelector sets spec.nodeSelector.
func NodeSelector(kv ...string) PodOpt { return func(p *api.Pod) { p.Spec.NodeSelector = pairs(kv) } }

// Tolerate adds a toleration.
func Tolerate(key, op, value, effect string) PodOpt {
	return func(p *api.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, api.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	}
}

// HostPort publishes a TCP host port.
func HostPort(port int32) PodOpt {
	return func(p *api.Pod) {
		c := &p.Spec.Containers[0]
		c.Ports = append(c.Ports, api.ContainerPort{ContainerPort: port, HostPort: port, Protocol: api.ProtocolTCP})
	}
}

// Image sets the container image.
func Image(ref string) PodOpt { return func(p *api.Pod) { p.Spec.Containers[0].Image = ref } }

// Owner sets a controller owner reference.
func Owner(uid string) PodOpt {
	return func(p *api.Pod) {
		yes := true
		p.OwnerReferences = []api.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + uid, UID: uid, Controller: &yes}}
	}
}

// Required adds a required node affinity term of one requirement.
func Required(key, op string, values ...string) PodOpt {
	return func(p *api.Pod) {
		na := nodeAffinity(p)
		if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			na.RequiredDuringSchedulingIgnoredDuringExecution = &api.NodeSelector{}
		}
		r := na.RequiredDuringSchedulingIgnoredDuringExecution
		r.NodeSelectorTerms = append(r.NodeSelectorTerms, api.NodeSelectorTerm{
			MatchExpressions: []api.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
		})
	}
}

// Preferred adds a preferred node affinity term of one requirement.
func Preferred(weight int32, key, op string, values ...string) PodOpt {
	return func(p *api.Pod) {
		na := nodeAffinity(p)
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			api.PreferredSchedulingTerm{Weight: weight, Preference: api.NodeSelectorTerm{
				MatchExpressions: []api.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}},
			}})
	}
}

func nodeAffinity(p *api.Pod) *api.NodeAffinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &api.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &api.NodeAffinity{}
	}
	return p.Spec.Affinity.NodeAffinity
}

func pairs(kv []string) map[string]string {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// PodLabels sets the pod's labels from key, value pairs.
func PodLabels(kv ...string) PodOpt { return func(p *api.Pod) { p.Labels = pairs(kv) } }

// Spread adds a topology spread constraint over key selecting app=<app>;
// when is DoNotSchedule or ScheduleAnyway.
func Spread(maxSkew int32, key, when, app string) PodOpt {
	return func(p *api.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, api.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &api.LabelSelector{MatchLabels: map[string]string{"app": app}}})
	}
}
