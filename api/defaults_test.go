package api

import (
	"encoding/json"
	"testing"
)

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  PullPolicy
	}{
		{"nginx", PullAlways},
		{"nginx:latest", PullAlways},
		{"nginx:1.27", PullIfNotPresent},
		{"registry.local:5000/nginx", PullAlways},
		{"registry.local:5000/nginx:1.2", PullIfNotPresent},
		{"nginx@sha256:abc", PullIfNotPresent},
		{"nginx:latest@sha256:abc", PullAlways},
		{"", PullAlways},
	}
	for _, tc := range tests {
		if got := defaultPullPolicy(tc.image); got != tc.want {
			t.Errorf("defaultPullPolicy(%q) = %v; want %v", tc.image, got, tc.want)
		}
	}
}

func TestSetDefaultsPod(t *testing.T) {
	p := &Pod{Spec: PodSpec{
		HostNetwork: true,
		Volumes: []Volume{
			{Name: "a"},
			{Name: "b", VolumeSource: VolumeSource{Secret: &SecretVolumeSource{SecretName: "s"}}},
			{Name: "c", VolumeSource: VolumeSource{ConfigMap: &ConfigMapVolumeSource{DefaultMode: ptrTo(int32(0o400))}}},
			{Name: "d", VolumeSource: VolumeSource{HostPath: &HostPathVolumeSource{Path: "/x"}}},
		},
		InitContainers: []Container{{Name: "i", Image: "busybox:1", Resources: ResourceRequirements{Limits: ResourceList{ResourceCPU: q("1")}}}},
		Containers: []Container{{
			Name:  "c",
			Image: "nginx",
			Ports: []ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, HostPort: 53, Protocol: ProtocolUDP}},
			Resources: ResourceRequirements{
				Limits:   ResourceList{ResourceCPU: q("1"), ResourceMemory: q("1Gi")},
				Requests: ResourceList{ResourceCPU: q("500m")},
			},
			LivenessProbe:  &Probe{ProbeHandler: ProbeHandler{HTTPGet: &HTTPGetAction{Port: FromInt(80)}}},
			ReadinessProbe: &Probe{PeriodSeconds: 3, ProbeHandler: ProbeHandler{TCPSocket: &TCPSocketAction{Port: FromInt(80)}}},
		}},
	}}
	SetDefaultsPod(p)
	s := p.Spec
	c := s.Containers[0]
	checks := []struct {
		what      string
		got, want any
	}{
		{"restartPolicy", s.RestartPolicy, RestartPolicyAlways},
		{"dnsPolicy", s.DNSPolicy, "ClusterFirst"},
		{"terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"securityContext set", s.SecurityContext != nil, true},
		{"enableServiceLinks", *s.EnableServiceLinks, true},
		{"volume a emptyDir", s.Volumes[0].EmptyDir != nil, true},
		{"secret defaultMode", *s.Volumes[1].Secret.DefaultMode, int32(0o644)},
		{"configMap defaultMode kept", *s.Volumes[2].ConfigMap.DefaultMode, int32(0o400)},
		{"hostPath type", *s.Volumes[3].HostPath.Type, ""},
		{"imagePullPolicy", c.ImagePullPolicy, PullAlways},
		{"init imagePullPolicy", s.InitContainers[0].ImagePullPolicy, PullIfNotPresent},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, "File"},
		{"port protocol", c.Ports[0].Protocol, ProtocolTCP},
		{"port protocol kept", c.Ports[1].Protocol, ProtocolUDP},
		{"hostNetwork hostPort", c.Ports[0].HostPort, int32(80)},
		{"cpu request kept", c.Resources.Requests[ResourceCPU].String(), "500m"},
		{"memory request from limit", c.Resources.Requests[ResourceMemory].String(), "1Gi"},
		{"init cpu request from limit", s.InitContainers[0].Resources.Requests[ResourceCPU].String(), "1"},
		{"liveness timeout", c.LivenessProbe.TimeoutSeconds, int32(1)},
		{"liveness period", c.LivenessProbe.PeriodSeconds, int32(10)},
		{"liveness success", c.LivenessProbe.SuccessThreshold, int32(1)},
		{"liveness failure", c.LivenessProbe.FailureThreshold, int32(3)},
		{"httpGet path", c.LivenessProbe.HTTPGet.Path, "/"},
		{"httpGet scheme", c.LivenessProbe.HTTPGet.Scheme, "HTTP"},
		{"readiness period kept", c.ReadinessProbe.PeriodSeconds, int32(3)},
		{"qosClass", p.Status.QOSClass, PodQOSBurstable},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("SetDefaultsPod: %s = %v; want %v", ck.what, ck.got, ck.want)
		}
	}
}

func TestSetDefaultsTemplateKeepsRequests(t *testing.T) {
	d := &Deployment{Spec: DeploymentSpec{Template: PodTemplateSpec{Spec: PodSpec{
		Containers: []Container{{Name: "c", Image: "x:1", Resources: ResourceRequirements{Limits: ResourceList{ResourceCPU: q("1")}}}},
	}}}}
	SetDefaults(d)
	if r := d.Spec.Template.Spec.Containers[0].Resources.Requests; r != nil {
		t.Errorf("SetDefaults(deployment) template requests = %v; want nil (only pods default requests to limits)", r)
	}
	if got := d.Spec.Template.Spec.Containers[0].ImagePullPolicy; got != PullIfNotPresent {
		t.Errorf("SetDefaults(deployment) template imagePullPolicy = %v; want IfNotPresent", got)
	}
}

func TestSetDefaultsWorkloads(t *testing.T) {
	d := &Deployment{}
	SetDefaults(d)
	ru := d.Spec.Strategy.RollingUpdate
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != RollingUpdateDeploymentStrategyType ||
		ru.MaxUnavailable.String() != "25%" || ru.MaxSurge.String() != "25%" ||
		*d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 ||
		d.Spec.Template.Spec.RestartPolicy != RestartPolicyAlways {
		b, _ := json.Marshal(d.Spec)
		t.Errorf("SetDefaults(deployment) spec = %s", b)
	}

	recreate := &Deployment{Spec: DeploymentSpec{Strategy: DeploymentStrategy{Type: RecreateDeploymentStrategyType}}}
	SetDefaults(recreate)
	if recreate.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("SetDefaults(recreate deployment) rollingUpdate = %v; want nil", recreate.Spec.Strategy.RollingUpdate)
	}

	ds := &DaemonSet{}
	SetDefaults(ds)
	dru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != RollingUpdateDaemonSetStrategyType || dru.MaxUnavailable.String() != "1" ||
		dru.MaxUnavailable.Type != Int || dru.MaxSurge.String() != "0" || *ds.Spec.RevisionHistoryLimit != 10 ||
		ds.Spec.Template.Spec.SchedulerName != DefaultSchedulerName {
		b, _ := json.Marshal(ds.Spec)
		t.Errorf("SetDefaults(daemonset) spec = %s", b)
	}
}

func TestSetDefaultsOtherKinds(t *testing.T) {
	s := &Secret{StringData: map[string]string{"a": "1", "b": "2"}, Data: map[string][]byte{"a": []byte("0"), "c": []byte("3")}}
	SetDefaults(s)
	if s.Type != "Opaque" || s.StringData != nil || string(s.Data["a"]) != "1" || string(s.Data["b"]) != "2" || string(s.Data["c"]) != "3" {
		t.Errorf("SetDefaults(secret) = type %q data %q stringData %v", s.Type, s.Data, s.StringData)
	}
	ns := &Namespace{ObjectMeta: ObjectMeta{Name: "prod"}}
	SetDefaults(ns)
	if ns.Status.Phase != "Active" || ns.Labels[LabelMetadataName] != "prod" {
		t.Errorf("SetDefaults(namespace) = phase %q labels %v", ns.Status.Phase, ns.Labels)
	}
	n := &Node{Spec: NodeSpec{PodCIDRs: []string{"10.42.3.0/24"}}, Status: NodeStatus{Capacity: ResourceList{ResourceCPU: q("2")}}}
	SetDefaults(n)
	if n.Spec.PodCIDR != "10.42.3.0/24" || n.Status.Allocatable[ResourceCPU].String() != "2" {
		t.Errorf("SetDefaults(node) = podCIDR %q allocatable %v", n.Spec.PodCIDR, n.Status.Allocatable)
	}
	n2 := &Node{Spec: NodeSpec{PodCIDR: "10.42.4.0/24"}}
	SetDefaults(n2)
	if len(n2.Spec.PodCIDRs) != 1 || n2.Spec.PodCIDRs[0] != "10.42.4.0/24" || n2.Status.Allocatable != nil {
		t.Errorf("SetDefaults(node) = podCIDRs %v allocatable %v", n2.Spec.PodCIDRs, n2.Status.Allocatable)
	}
}

func TestSetDefaultsNeverPanics(t *testing.T) {
	objs := []Object{
		nil, (*Pod)(nil), (*Node)(nil), (*Namespace)(nil), (*Secret)(nil), (*ConfigMap)(nil), (*Event)(nil),
		(*Deployment)(nil), (*DaemonSet)(nil), &unknownObject{},
		&Pod{}, &Node{}, &Namespace{}, &Secret{}, &ConfigMap{}, &Event{}, &Deployment{}, &DaemonSet{},
		&Pod{Spec: PodSpec{Containers: []Container{{}}, InitContainers: []Container{{LivenessProbe: &Probe{}}}, Volumes: []Volume{{}}}},
	}
	for _, obj := range objs {
		SetDefaults(obj)
		SetDefaults(obj) // idempotent and still safe
		_ = Validate(obj)
	}
}

func TestSetDefaultsIdempotent(t *testing.T) {
	for _, obj := range validObjects() {
		before, _ := json.Marshal(obj)
		SetDefaults(obj)
		after, _ := json.Marshal(obj)
		if string(before) != string(after) {
			t.Errorf("SetDefaults(%T) changed a defaulted object:\n%s\n%s", obj, before, after)
		}
	}
}
