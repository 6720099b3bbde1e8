package printers

import (
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
)

// now is the fixed "current time" of every fixture.
var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// ago is a timestamp d before now.
func ago(d time.Duration) api.Time { return api.NewTime(now.Add(-d)) }

func agoPtr(d time.Duration) *api.Time { t := ago(d); return &t }

func ptr[T any](v T) *T { return &v }

func meta(ns, name string, age time.Duration) api.ObjectMeta {
	return api.ObjectMeta{Name: name, Namespace: ns, UID: "uid-" + name, CreationTimestamp: ago(age)}
}

func running(since time.Duration) api.ContainerState {
	return api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: ago(since)}}
}

func waiting(reason string) api.ContainerState {
	return api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: reason}}
}

func terminated(reason string, code int32, finished time.Duration) api.ContainerState {
	return api.ContainerState{Terminated: &api.ContainerStateTerminated{
		Reason: reason, ExitCode: code, StartedAt: ago(finished + time.Minute), FinishedAt: ago(finished),
	}}
}

func conds(types ...string) []api.PodCondition {
	var out []api.PodCondition
	for _, t := range types {
		out = append(out, api.PodCondition{Type: t, Status: api.ConditionTrue, LastTransitionTime: ago(time.Hour)})
	}
	return out
}

const day = 24 * time.Hour

// Pods covering every STATUS the table computes.
func fixturePods() []*api.Pod {
	webRunning := &api.Pod{
		ObjectMeta: meta("default", "web-7d4b9c-x2k8p", 2*day+3*time.Hour),
		Spec: api.PodSpec{
			NodeName:   "node-1",
			Containers: []api.Container{{Name: "nginx", Image: "nginx:1.27"}, {Name: "sidecar", Image: "busybox:1.36"}},
		},
		Status: api.PodStatus{
			Phase:      api.PodRunning,
			Conditions: conds(api.PodInitialized, api.PodReady, api.ContainersReady, api.PodScheduled),
			HostIP:     "192.168.1.10",
			PodIP:      "10.42.0.5",
			PodIPs:     []api.PodIP{{IP: "10.42.0.5"}},
			ContainerStatuses: []api.ContainerStatus{
				{Name: "nginx", Ready: true, State: running(2 * day)},
				{Name: "sidecar", Ready: true, State: running(5 * time.Minute), RestartCount: 1,
					LastTerminationState: terminated("Error", 1, 5*time.Minute)},
			},
		},
	}
	creating := &api.Pod{
		ObjectMeta: meta("default", "pending-creating", 5*time.Second),
		Spec:       api.PodSpec{NodeName: "node-2", Containers: []api.Container{{Name: "app", Image: "registry.local/app:v2"}}},
		Status: api.PodStatus{
			Phase:             api.PodPending,
			Conditions:        conds(api.PodScheduled),
			ContainerStatuses: []api.ContainerStatus{{Name: "app", State: waiting("ContainerCreating")}},
		},
	}
	crash := &api.Pod{
		ObjectMeta: meta("default", "crashy", 3*time.Minute+20*time.Second),
		Spec:       api.PodSpec{NodeName: "node-1", Containers: []api.Container{{Name: "app", Image: "crashy:latest"}}},
		Status: api.PodStatus{
			Phase:  api.PodRunning,
			PodIP:  "10.42.0.9", // an agent that fills podIP only
			HostIP: "192.168.1.10",
			ContainerStatuses: []api.ContainerStatus{{Name: "app", State: waiting("CrashLoopBackOff"), RestartCount: 5,
				LastTerminationState: terminated("Error", 2, 30*time.Second)}},
		},
	}
	completed := &api.Pod{
		ObjectMeta: meta("default", "backup-29001", 45*day),
		Spec:       api.PodSpec{NodeName: "node-2", RestartPolicy: api.RestartPolicyNever, Containers: []api.Container{{Name: "backup", Image: "restic:0.17"}}},
		Status: api.PodStatus{
			Phase:             api.PodSucceeded,
			ContainerStatuses: []api.ContainerStatus{{Name: "backup", State: terminated("Completed", 0, 45*day-time.Hour)}},
		},
	}
	terminating := &api.Pod{
		ObjectMeta: meta("default", "old-web", 10*time.Minute),
		Spec:       api.PodSpec{NodeName: "node-1", Containers: []api.Container{{Name: "nginx", Image: "nginx:1.26"}}},
		Status: api.PodStatus{
			Phase:             api.PodRunning,
			Conditions:        conds(api.PodReady),
			PodIPs:            []api.PodIP{{IP: "10.42.0.7"}},
			ContainerStatuses: []api.ContainerStatus{{Name: "nginx", Ready: true, State: running(10 * time.Minute)}},
		},
	}
	terminating.DeletionTimestamp = agoPtr(20 * time.Second)
	terminating.DeletionGracePeriodSeconds = ptr(int64(30))
	initPod := &api.Pod{
		ObjectMeta: meta("default", "db-migrate", 5*time.Hour+3*time.Minute),
		Spec: api.PodSpec{
			NodeName:       "node-2",
			InitContainers: []api.Container{{Name: "wait-db", Image: "busybox:1.36"}, {Name: "migrate", Image: "migrate:4"}},
			Containers:     []api.Container{{Name: "app", Image: "app:1"}},
		},
		Status: api.PodStatus{
			Phase: api.PodPending,
			InitContainerStatuses: []api.ContainerStatus{
				{Name: "wait-db", State: running(5 * time.Hour)},
				{Name: "migrate", State: waiting("PodInitializing")},
			},
			ContainerStatuses: []api.ContainerStatus{{Name: "app", State: waiting("PodInitializing")}},
		},
	}
	unscheduled := &api.Pod{
		ObjectMeta: meta("default", "too-big", (3*365+120)*day),
		Spec:       api.PodSpec{Containers: []api.Container{{Name: "app", Image: "app:1"}}},
		Status: api.PodStatus{
			Phase:      api.PodPending,
			Conditions: []api.PodCondition{{Type: api.PodScheduled, Status: api.ConditionFalse, Reason: "Unschedulable"}},
		},
	}
	return []*api.Pod{webRunning, creating, crash, completed, terminating, initPod, unscheduled}
}

// systemPod lives in another namespace, for -A tables.
func systemPod() *api.Pod {
	return &api.Pod{
		ObjectMeta: meta("kube-system", "coredns-5d78c9869d-abcde", 12*day),
		Spec:       api.PodSpec{NodeName: "node-1", Containers: []api.Container{{Name: "coredns", Image: "coredns:1.11"}}},
		Status: api.PodStatus{
			Phase: api.PodRunning, Conditions: conds(api.PodReady), PodIPs: []api.PodIP{{IP: "10.42.0.2"}},
			ContainerStatuses: []api.ContainerStatus{{Name: "coredns", Ready: true, State: running(12 * day)}},
		},
	}
}

func quantities(kv ...string) api.ResourceList {
	rl := api.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		rl[api.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return rl
}

func fixtureNodes() []*api.Node {
	n1 := &api.Node{
		ObjectMeta: meta("", "node-1", 90*day),
		Spec:       api.NodeSpec{PodCIDR: "10.42.0.0/24", PodCIDRs: []string{"10.42.0.0/24"}},
		Status: api.NodeStatus{
			Capacity:    quantities("cpu", "4", "memory", "8Gi", "pods", "110"),
			Allocatable: quantities("cpu", "3800m", "memory", "7Gi", "pods", "110"),
			Conditions: []api.NodeCondition{
				{Type: api.NodeMemoryPressure, Status: api.ConditionFalse, LastHeartbeatTime: ago(10 * time.Second), LastTransitionTime: ago(90 * day), Reason: "AgentHasSufficientMemory", Message: "agent has sufficient memory available"},
				{Type: api.NodeReady, Status: api.ConditionTrue, LastHeartbeatTime: ago(10 * time.Second), LastTransitionTime: ago(90 * day), Reason: "AgentReady", Message: "agent is posting ready status"},
			},
			Addresses: []api.NodeAddress{{Type: api.NodeInternalIP, Address: "192.168.1.10"}, {Type: api.NodeHostName, Address: "node-1"}},
			NodeInfo: api.NodeSystemInfo{
				MachineID: "8f3e2c", BootID: "b00t-1", KernelVersion: "6.8.0-45-generic", OSImage: "Ubuntu 24.04.1 LTS",
				ContainerRuntimeVersion: "containerd://1.7.22", KubeletVersion: "v1.32.0-skiff.1", OperatingSystem: "linux", Architecture: "amd64",
			},
		},
	}
	n1.Labels = map[string]string{"kubernetes.io/hostname": "node-1", "node-role.kubernetes.io/control-plane": ""}
	n1.Annotations = map[string]string{"skiff.dev/agent-version": "0.1.0"}

	n2 := &api.Node{
		ObjectMeta: meta("", "node-2", 6*day+4*time.Hour),
		Spec: api.NodeSpec{Unschedulable: true, Taints: []api.Taint{
			{Key: "node.kubernetes.io/unreachable", Effect: api.TaintEffectNoExecute},
			{Key: "node.kubernetes.io/unschedulable", Effect: api.TaintEffectNoSchedule},
			{Key: "dedicated", Value: "edge", Effect: api.TaintEffectNoSchedule},
		}},
		Status: api.NodeStatus{
			Conditions: []api.NodeCondition{{Type: api.NodeReady, Status: api.ConditionUnknown, LastHeartbeatTime: ago(5 * time.Minute),
				LastTransitionTime: ago(4 * time.Minute), Reason: "NodeStatusUnknown", Message: "Agent stopped posting node status."}},
			Addresses: []api.NodeAddress{{Type: api.NodeInternalIP, Address: "192.168.1.11"}, {Type: api.NodeExternalIP, Address: "203.0.113.7"}},
			NodeInfo: api.NodeSystemInfo{KernelVersion: "6.6.31-v8+", OSImage: "Debian GNU/Linux 12 (bookworm)",
				ContainerRuntimeVersion: "containerd://1.6.20", KubeletVersion: "v1.32.0-skiff.1", OperatingSystem: "linux", Architecture: "arm64"},
		},
	}
	n2.Labels = map[string]string{"kubernetes.io/role": "worker", "node-role.kubernetes.io/edge": "true"}

	n3 := &api.Node{ObjectMeta: meta("", "node-3", 90*time.Second)} // registered, never reported
	return []*api.Node{n1, n2, n3}
}

func fixtureDeployments() []*api.Deployment {
	web := &api.Deployment{
		ObjectMeta: meta("default", "web", 7*time.Hour),
		Spec: api.DeploymentSpec{
			Replicas: ptr(int32(3)),
			Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "frontend"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: api.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "frontend"}},
				Spec: api.PodSpec{Containers: []api.Container{
					{Name: "nginx", Image: "nginx:1.27", Ports: []api.ContainerPort{{ContainerPort: 80}}},
					{Name: "sidecar", Image: "busybox:1.36"},
				}},
			},
			Strategy: api.DeploymentStrategy{Type: api.RollingUpdateDeploymentStrategyType, RollingUpdate: &api.RollingUpdateDeployment{
				MaxUnavailable: ptr(api.FromInt(1)), MaxSurge: ptr(api.FromString("50%")),
			}},
		},
		Status: api.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, UnavailableReplicas: 1,
			Conditions: []api.DeploymentCondition{
				{Type: "Available", Status: api.ConditionFalse, Reason: "MinimumReplicasUnavailable"},
				{Type: "Progressing", Status: api.ConditionTrue, Reason: "NewPodsAvailable"},
			}},
	}
	web.Labels = map[string]string{"app": "web"}
	api1 := &api.Deployment{
		ObjectMeta: meta("default", "api", 50*time.Second),
		Spec: api.DeploymentSpec{
			Selector: &api.LabelSelector{MatchExpressions: []api.LabelSelectorRequirement{{Key: "app", Operator: api.LabelSelectorOpIn, Values: []string{"api", "api-canary"}}}},
			Template: api.PodTemplateSpec{Spec: api.PodSpec{Containers: []api.Container{{Name: "api", Image: "registry.local/api:v3"}}}},
			Strategy: api.DeploymentStrategy{Type: api.RecreateDeploymentStrategyType},
		},
	}
	return []*api.Deployment{web, api1}
}

func fixtureDaemonSets() []*api.DaemonSet {
	fluent := &api.DaemonSet{
		ObjectMeta: meta("kube-system", "fluent-bit", 30*day),
		Spec: api.DaemonSetSpec{
			Selector: &api.LabelSelector{MatchLabels: map[string]string{"name": "fluent-bit"}},
			Template: api.PodTemplateSpec{
				ObjectMeta: api.ObjectMeta{Labels: map[string]string{"name": "fluent-bit"}},
				Spec: api.PodSpec{
					Containers: []api.Container{{Name: "fluent-bit", Image: "fluent/fluent-bit:3.1",
						Resources:    api.ResourceRequirements{Requests: quantities("cpu", "50m", "memory", "64Mi"), Limits: quantities("memory", "128Mi")},
						VolumeMounts: []api.VolumeMount{{Name: "varlog", MountPath: "/var/log", ReadOnly: true}}}},
					Volumes:     []api.Volume{{Name: "varlog", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/var/log"}}}},
					Tolerations: []api.Toleration{{Operator: "Exists"}},
				},
			},
		},
		Status: api.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 3, NumberAvailable: 2},
	}
	edge := &api.DaemonSet{
		ObjectMeta: meta("default", "edge-agent", 2*time.Hour),
		Spec: api.DaemonSetSpec{
			Selector: &api.LabelSelector{MatchLabels: map[string]string{"app": "edge-agent"}},
			Template: api.PodTemplateSpec{Spec: api.PodSpec{
				NodeSelector: map[string]string{"node-role.kubernetes.io/edge": "true", "kubernetes.io/arch": "arm64"},
				Containers:   []api.Container{{Name: "agent", Image: "edge-agent:0.3"}},
			}},
			UpdateStrategy: api.DaemonSetUpdateStrategy{Type: api.OnDeleteDaemonSetStrategyType},
		},
		Status: api.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, NumberMisscheduled: 1},
	}
	return []*api.DaemonSet{fluent, edge}
}

func fixtureEvents() []*api.Event {
	scheduled := &api.Event{
		ObjectMeta:     meta("default", "web-7d4b9c-x2k8p.17f1", 2*day),
		InvolvedObject: api.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-7d4b9c-x2k8p", UID: "uid-web-7d4b9c-x2k8p"},
		Reason:         "Scheduled", Message: "Successfully assigned default/web-7d4b9c-x2k8p to node-1",
		Source: api.EventSource{Component: "default-scheduler"}, Type: api.EventTypeNormal,
		FirstTimestamp: ago(2 * day), LastTimestamp: ago(2 * day), Count: 1,
	}
	backoff := &api.Event{
		ObjectMeta:     meta("default", "crashy.17f2", 3*time.Minute),
		InvolvedObject: api.ObjectReference{Kind: "Pod", Namespace: "default", Name: "crashy", FieldPath: "spec.containers{app}"},
		Reason:         "BackOff", Message: "Back-off restarting failed container app in pod crashy_default(uid-crashy)\n",
		Source: api.EventSource{Component: "agent", Host: "node-1"}, Type: api.EventTypeWarning,
		FirstTimestamp: ago(3 * time.Minute), LastTimestamp: ago(20 * time.Second), Count: 5,
	}
	newStyle := &api.Event{
		ObjectMeta:     meta("default", "web.17f3", 40*time.Second),
		InvolvedObject: api.ObjectReference{Kind: "Deployment", Namespace: "default", Name: "web", APIVersion: "apps/v1"},
		Reason:         "ScalingReplicaSet", Message: "Scaled up to 3 pods",
		Type: api.EventTypeNormal, EventTime: api.MicroTime{Time: now.Add(-40 * time.Second)},
		ReportingController: "skiff-controller-manager", ReportingInstance: "server-1",
	}
	nodeEvent := &api.Event{
		ObjectMeta:     meta("default", "node-2.17f4", 4*time.Minute),
		InvolvedObject: api.ObjectReference{Kind: "Node", Name: "node-2"},
		Reason:         "NodeNotReady", Message: "Node node-2 status is now: NodeNotReady",
		Source: api.EventSource{Component: "node-controller"}, Type: api.EventTypeNormal,
		FirstTimestamp: ago(4 * time.Minute), LastTimestamp: ago(4 * time.Minute), Count: 1,
	}
	return []*api.Event{scheduled, backoff, newStyle, nodeEvent}
}

func fixtureSecrets() []*api.Secret {
	return []*api.Secret{
		{ObjectMeta: meta("default", "db-creds", 20*day), Type: "Opaque",
			Data: map[string][]byte{"username": []byte("admin"), "password": []byte("hunter22")}},
		{ObjectMeta: meta("default", "web-tls", 9*time.Hour), Type: "kubernetes.io/tls",
			Data: map[string][]byte{"tls.crt": make([]byte, 1164), "tls.key": make([]byte, 227)}},
	}
}

func fixtureConfigMaps() []*api.ConfigMap {
	return []*api.ConfigMap{
		{ObjectMeta: meta("default", "app-config", 3*day),
			Data:       map[string]string{"LOG_LEVEL": "debug", "app.properties": "color=blue\nsize=\tlarge\n", "EMPTY": ""},
			BinaryData: map[string][]byte{"logo.png": make([]byte, 2048)}},
		{ObjectMeta: meta("default", "empty", 15*time.Minute)},
	}
}

func fixtureNamespaces() []*api.Namespace {
	return []*api.Namespace{
		{ObjectMeta: meta("", "default", 90*day), Status: api.NamespaceStatus{Phase: "Active"}},
		{ObjectMeta: meta("", "kube-system", 90*day), Status: api.NamespaceStatus{Phase: "Active"}},
		{ObjectMeta: meta("", "scratch", 10*time.Minute), Status: api.NamespaceStatus{Phase: "Terminating"}},
	}
}

// objects converts typed fixtures to []api.Object.
func objects[T api.Object](in []T) []api.Object {
	out := make([]api.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}
