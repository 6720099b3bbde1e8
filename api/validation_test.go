package api

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api/resource"
)

// fe is one expected field error: its path and type.
type fe struct {
	field string
	typ   FieldErrorType
}

func (e fe) String() string { return e.field + " " + string(e.typ) }

func req(f string) fe  { return fe{f, FieldValueRequired} }
func inv(f string) fe  { return fe{f, FieldValueInvalid} }
func dup(f string) fe  { return fe{f, FieldValueDuplicate} }
func nsup(f string) fe { return fe{f, FieldValueNotSupported} }
func forb(f string) fe { return fe{f, FieldValueForbidden} }
func long(f string) fe { return fe{f, FieldValueTooLong} }

func sortFE(l []fe) []fe {
	l = slices.Clone(l)
	slices.SortFunc(l, func(a, b fe) int {
		return cmp.Or(strings.Compare(a.field, b.field), strings.Compare(string(a.typ), string(b.typ)))
	})
	return l
}

func summarize(errs FieldErrors) []fe {
	var out []fe
	for _, e := range errs {
		out = append(out, fe{e.Field, e.Type})
	}
	return sortFE(out)
}

// checkErrs compares the paths and types of errs with want, ignoring order.
func checkErrs(t *testing.T, call string, errs FieldErrors, want ...fe) {
	t.Helper()
	got := summarize(errs)
	if !slices.Equal(got, sortFE(want)) {
		t.Errorf("%s errors = %v; want %v\nfull errors: %v", call, got, sortFE(want), errs)
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

// Fixtures: valid, defaulted objects of every kind. Each call returns a
// fresh object the test may change.

func validPod() *Pod {
	p := &Pod{
		TypeMeta:   TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: ObjectMeta{Name: "web-0", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: PodSpec{
			Volumes: []Volume{
				{Name: "data", VolumeSource: VolumeSource{EmptyDir: &EmptyDirVolumeSource{}}},
				{Name: "conf", VolumeSource: VolumeSource{ConfigMap: &ConfigMapVolumeSource{LocalObjectReference: LocalObjectReference{Name: "web-conf"}}}},
			},
			InitContainers: []Container{{Name: "init", Image: "busybox:1.36", Command: []string{"true"}}},
			Containers: []Container{{
				Name:  "web",
				Image: "nginx:1.27",
				Ports: []ContainerPort{{Name: "http", ContainerPort: 80}},
				Env:   []EnvVar{{Name: "MODE", Value: "prod"}},
				Resources: ResourceRequirements{
					Requests: ResourceList{ResourceCPU: q("100m"), ResourceMemory: q("64Mi")},
					Limits:   ResourceList{ResourceCPU: q("500m"), ResourceMemory: q("128Mi")},
				},
				VolumeMounts:   []VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "conf", MountPath: "/etc/web", ReadOnly: true}},
				LivenessProbe:  &Probe{ProbeHandler: ProbeHandler{HTTPGet: &HTTPGetAction{Path: "/healthz", Port: FromString("http")}}},
				ReadinessProbe: &Probe{ProbeHandler: ProbeHandler{TCPSocket: &TCPSocketAction{Port: FromInt(80)}}},
			}, {
				Name:  "sidecar",
				Image: "busybox",
			}},
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Tolerations:  []Toleration{{Key: "dedicated", Operator: "Equal", Value: "web", Effect: TaintEffectNoSchedule}},
		},
	}
	SetDefaultsPod(p)
	return p
}

func validDeployment() *Deployment {
	d := &Deployment{
		TypeMeta:   TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: ObjectMeta{Name: "web", Namespace: "default"},
		Spec: DeploymentSpec{
			Replicas: ptrTo(int32(3)),
			Selector: &LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: PodTemplateSpec{
				ObjectMeta: ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       PodSpec{Containers: []Container{{Name: "web", Image: "nginx:1.27", Ports: []ContainerPort{{ContainerPort: 80}}}}},
			},
		},
	}
	SetDefaultsDeployment(d)
	return d
}

func validDaemonSet() *DaemonSet {
	ds := &DaemonSet{
		TypeMeta:   TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: ObjectMeta{Name: "agent", Namespace: "kube-system"},
		Spec: DaemonSetSpec{
			Selector: &LabelSelector{MatchExpressions: []LabelSelectorRequirement{{Key: "name", Operator: LabelSelectorOpIn, Values: []string{"agent"}}}},
			Template: PodTemplateSpec{
				ObjectMeta: ObjectMeta{Labels: map[string]string{"name": "agent"}},
				Spec: PodSpec{
					Containers:  []Container{{Name: "agent", Image: "example.com/agent@sha256:0123456789abcdef"}},
					Tolerations: []Toleration{{Operator: TolerationOpExists}},
					HostNetwork: true,
				},
			},
		},
	}
	SetDefaultsDaemonSet(ds)
	return ds
}

func validNode() *Node {
	n := &Node{
		ObjectMeta: ObjectMeta{Name: "edge-1.example.com", Labels: map[string]string{"kubernetes.io/hostname": "edge-1"}},
		Spec: NodeSpec{
			PodCIDR: "10.42.1.0/24",
			Taints:  []Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: TaintEffectNoSchedule}, {Key: "gpu", Value: "true", Effect: TaintEffectPreferNoSchedule}},
		},
		Status: NodeStatus{Capacity: ResourceList{ResourceCPU: q("4"), ResourceMemory: q("8Gi"), ResourcePods: q("110")}},
	}
	SetDefaultsNode(n)
	return n
}

func validNamespace() *Namespace {
	ns := &Namespace{ObjectMeta: ObjectMeta{Name: "team-a"}}
	SetDefaultsNamespace(ns)
	return ns
}

func validSecret() *Secret {
	s := &Secret{
		ObjectMeta: ObjectMeta{Name: "db-creds", Namespace: "default"},
		Data:       map[string][]byte{"password": []byte("hunter2")},
		StringData: map[string]string{"user.name": "admin"},
	}
	SetDefaultsSecret(s)
	return s
}

func validConfigMap() *ConfigMap {
	return &ConfigMap{
		ObjectMeta: ObjectMeta{Name: "web-conf", Namespace: "default"},
		Data:       map[string]string{"nginx.conf": "events {}", "MODE": "prod"},
		BinaryData: map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G'}},
	}
}

func validEvent() *Event {
	return &Event{
		ObjectMeta:     ObjectMeta{Name: "web-0.17a8c2b4f0e1d2c3", Namespace: "default"},
		InvolvedObject: ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-0", APIVersion: "v1"},
		Reason:         "Scheduled",
		Message:        "Successfully assigned default/web-0 to edge-1",
		Type:           EventTypeNormal,
		Count:          1,
	}
}

func validObjects() []Object {
	return []Object{validPod(), validDeployment(), validDaemonSet(), validNode(), validNamespace(), validSecret(), validConfigMap(), validEvent()}
}

func TestValidateValidFixtures(t *testing.T) {
	for _, obj := range validObjects() {
		if errs := Validate(obj); errs != nil {
			t.Errorf("Validate(%T) = %v; want nil", obj, errs)
		}
		if errs := ValidateUpdate(obj, obj); errs != nil {
			t.Errorf("ValidateUpdate(%T, itself) = %v; want nil", obj, errs)
		}
	}
}

type unknownObject struct {
	TypeMeta
	ObjectMeta
}

func TestValidateOddInput(t *testing.T) {
	tests := []struct {
		name string
		obj  Object
		want []fe
	}{
		{"nil", nil, []fe{req("")}},
		{"typed nil pod", (*Pod)(nil), []fe{req("")}},
		{"typed nil deployment", (*Deployment)(nil), []fe{req("")}},
		{"unknown kind", &unknownObject{}, []fe{nsup("kind")}},
		{"empty pod", &Pod{}, []fe{req("metadata.name"), req("metadata.namespace"), req("spec.containers"), req("spec.restartPolicy"), req("spec.dnsPolicy")}},
	}
	for _, tc := range tests {
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(tc.obj), tc.want...)
	}
}

// TestValidateKubernetesStyleObjects checks objects written the way the
// Kubernetes documentation writes them, before defaulting.
func TestValidateKubernetesStyleObjects(t *testing.T) {
	objs := []Object{
		&Pod{
			ObjectMeta: ObjectMeta{GenerateName: "job-", Namespace: "batch", Annotations: map[string]string{"Example.COM/Owner": "team a"}},
			Spec: PodSpec{
				RestartPolicy: RestartPolicyOnFailure,
				Containers: []Container{{
					Name: "pi", Image: "perl:5.34.0", Command: []string{"perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"},
					Env: []EnvVar{
						{Name: "db.password", ValueFrom: &EnvVarSource{SecretKeyRef: &SecretKeySelector{LocalObjectReference: LocalObjectReference{Name: "db"}, Key: "password"}}},
						{Name: "1-weird name", Value: "ok"},
					},
					Resources:       ResourceRequirements{Limits: ResourceList{ResourceCPU: q("1"), ResourceMemory: q("1Gi"), ResourceEphemeralStorage: q("2Gi")}},
					SecurityContext: &SecurityContext{Capabilities: &Capabilities{Add: []string{"NET_ADMIN"}, Drop: []string{"ALL"}}, RunAsUser: ptrTo(int64(1000))},
				}},
				Affinity: &Affinity{NodeAffinity: &NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &NodeSelector{NodeSelectorTerms: []NodeSelectorTerm{
						{MatchExpressions: []NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"arm64", "amd64"}}, {Key: "cores", Operator: "Gt", Values: []string{"3"}}}},
						{MatchFields: []NodeSelectorRequirement{{Key: "metadata.name", Operator: "NotIn", Values: []string{"edge-9"}}}},
					}},
					PreferredDuringSchedulingIgnoredDuringExecution: []PreferredSchedulingTerm{{Weight: 100, Preference: NodeSelectorTerm{MatchExpressions: []NodeSelectorRequirement{{Key: "ssd", Operator: "Exists"}}}}},
				}},
				Tolerations: []Toleration{
					{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(300))},
				},
				Volumes: []Volume{
					{Name: "certs", VolumeSource: VolumeSource{Secret: &SecretVolumeSource{SecretName: "tls", Items: []KeyToPath{{Key: "tls.crt", Path: "certs/server.crt", Mode: ptrTo(int32(0o400))}}}}},
					{Name: "host-logs", VolumeSource: VolumeSource{HostPath: &HostPathVolumeSource{Path: "/var/log", Type: ptrTo("Directory")}}},
				},
			},
		},
		&Deployment{
			ObjectMeta: ObjectMeta{Name: "api", Namespace: "prod"},
			Spec: DeploymentSpec{
				Selector: &LabelSelector{MatchLabels: map[string]string{"app": "api"}},
				Strategy: DeploymentStrategy{Type: RecreateDeploymentStrategyType},
				Template: PodTemplateSpec{
					ObjectMeta: ObjectMeta{Labels: map[string]string{"app": "api"}},
					Spec:       PodSpec{Containers: []Container{{Name: "api", Image: "api:2", Ports: []ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: ProtocolUDP}}}}},
				},
			},
		},
		&Secret{
			ObjectMeta: ObjectMeta{Name: "tls", Namespace: "default"},
			Type:       SecretTypeTLS,
			Data:       map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key")},
		},
		&Secret{
			ObjectMeta: ObjectMeta{Name: "regcred", Namespace: "default"},
			Type:       SecretTypeDockerConfigJSON,
			Data:       map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)},
		},
		&Event{
			ObjectMeta:     ObjectMeta{Name: "edge-1.1", Namespace: "default"},
			InvolvedObject: ObjectReference{Kind: "Node", Name: "edge-1"},
			Reason:         "NodeReady",
		},
	}
	for _, obj := range objs {
		SetDefaults(obj)
		if errs := Validate(obj); errs != nil {
			t.Errorf("Validate(%T %s) = %v; want nil", obj, obj.GetObjectMeta().Name, errs)
		}
	}
}

func TestFieldErrorMessages(t *testing.T) {
	p := validPod()
	p.Name = "Web_0"
	p.Spec.Containers[0].Image = ""
	p.Spec.Containers[0].Resources.Requests[ResourceCPU] = q("2")
	errs := Validate(p)
	want := []string{
		`metadata.name: Invalid value: "Web_0": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`spec.containers[0].image: Required value`,
		`spec.containers[0].resources.requests[cpu]: Invalid value: "2": must be less than or equal to cpu limit of 500m`,
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Validate(pod) messages =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
