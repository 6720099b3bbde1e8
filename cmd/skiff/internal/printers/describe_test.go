package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// describedPod is the running web pod dressed with everything describe
// shows: owner, init container, probes, env, mounts, volumes, tolerations.
func describedPod() *api.Pod {
	p := fixturePods()[0]
	p.Labels = map[string]string{"app": "web", "pod-template-hash": "7d4b9c"}
	p.Annotations = map[string]string{
		"skiff.dev/restartedAt": "2025-02-27T09:00:00Z",
		lastAppliedAnnotation:   `{"huge":"json"}`,
	}
	p.OwnerReferences = []api.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web", Controller: ptr(true)}}
	p.Spec.Priority = ptr(int32(0))
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	p.Spec.InitContainers = []api.Container{{Name: "init-perms", Image: "busybox:1.36", Command: []string{"sh", "-c", "chown -R 101 /data"}}}
	p.Status.InitContainerStatuses = []api.ContainerStatus{{Name: "init-perms", State: terminated("Completed", 0, 2*day), ImageID: "docker.io/library/busybox@sha256:abc", ContainerID: "containerd://i1"}}
	p.Status.StartTime = agoPtr(2*day + 3*time.Hour)
	p.Status.QOSClass = api.PodQOSBurstable
	c := &p.Spec.Containers[0]
	c.Ports = []api.ContainerPort{{ContainerPort: 80, Name: "http"}, {ContainerPort: 53, Protocol: api.ProtocolUDP, HostPort: 5353}}
	c.Args = []string{"-g", "daemon off;"}
	c.Resources = api.ResourceRequirements{Requests: quantities("cpu", "250m", "memory", "64Mi"), Limits: quantities("cpu", "500m", "memory", "128Mi")}
	c.LivenessProbe = &api.Probe{ProbeHandler: api.ProbeHandler{HTTPGet: &api.HTTPGetAction{Path: "/healthz", Port: api.FromInt(8080)}}, InitialDelaySeconds: 3, PeriodSeconds: 3}
	c.ReadinessProbe = &api.Probe{ProbeHandler: api.ProbeHandler{TCPSocket: &api.TCPSocketAction{Port: api.FromString("http")}}}
	c.StartupProbe = &api.Probe{ProbeHandler: api.ProbeHandler{Exec: &api.ExecAction{Command: []string{"cat", "/tmp/ready"}}}, FailureThreshold: 30}
	c.Env = []api.EnvVar{
		{Name: "MODE", Value: "production"},
		{Name: "DB_PASSWORD", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "db-creds"}, Key: "password"}}},
		{Name: "LOG_LEVEL", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: &api.ConfigMapKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "app-config"}, Key: "LOG_LEVEL", Optional: ptr(true)}}},
	}
	c.VolumeMounts = []api.VolumeMount{{Name: "data", MountPath: "/usr/share/nginx/html"}, {Name: "config", MountPath: "/etc/nginx/conf.d", ReadOnly: true, SubPath: "nginx"}}
	p.Status.ContainerStatuses[0].ContainerID = "containerd://c1"
	p.Status.ContainerStatuses[0].ImageID = "docker.io/library/nginx@sha256:def"
	p.Status.ContainerStatuses[0].Image = "nginx:1.27"
	p.Spec.Volumes = []api.Volume{
		{Name: "data", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}},
		{Name: "config", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "nginx-conf"}}}},
		{Name: "certs", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "web-tls", Optional: ptr(true)}}},
		{Name: "logs", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/var/log/web", Type: ptr("DirectoryOrCreate")}}},
	}
	p.Spec.Tolerations = []api.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: "Exists", Effect: api.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
		{Key: "dedicated", Operator: "Equal", Value: "edge", Effect: api.TaintEffectNoSchedule},
	}
	return p
}

func podEvents() []api.Event {
	var out []api.Event
	for _, e := range fixtureEvents() {
		out = append(out, *e)
	}
	return out
}

func TestDescribeGolden(t *testing.T) {
	pods := fixturePods()
	tests := []struct {
		golden string
		obj    api.Object
		events []api.Event
	}{
		{"pod", describedPod(), podEvents()[:1]},
		{"pod-crashloop", pods[2], podEvents()[1:2]},
		{"pod-terminating", pods[4], nil},
		{"pod-init", pods[5], nil},
		{"pod-unscheduled", pods[6], nil},
		{"node", fixtureNodes()[0], nil},
		{"node-notready", fixtureNodes()[1], podEvents()[3:]},
		{"node-empty", fixtureNodes()[2], nil},
		{"deployment", fixtureDeployments()[0], podEvents()[2:3]},
		{"deployment-recreate", fixtureDeployments()[1], nil},
		{"daemonset", fixtureDaemonSets()[0], nil},
		{"daemonset-ondelete", fixtureDaemonSets()[1], nil},
		{"secret", fixtureSecrets()[0], nil},
		{"configmap", fixtureConfigMaps()[0], nil},
		{"namespace", fixtureNamespaces()[2], nil},
		{"event", fixtureEvents()[1], nil},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			var b bytes.Buffer
			if err := Describe(&b, tc.obj, tc.events, now); err != nil {
				t.Fatalf("Describe() = %v", err)
			}
			checkGolden(t, "describe-"+tc.golden, b.Bytes())
		})
	}
}

func TestDescribeNodeWithPods(t *testing.T) {
	var pods []api.Pod
	for _, p := range append(fixturePods(), systemPod()) {
		if p.Spec.NodeName == "node-1" {
			pods = append(pods, *p)
		}
	}
	// Requests and limits to total up; the init container's larger cpu
	// request counts instead of the sum of the app containers'.
	pods[0].Spec.Containers[0].Resources = api.ResourceRequirements{Requests: quantities("cpu", "250m", "memory", "64Mi"), Limits: quantities("memory", "128Mi")}
	pods[0].Spec.Containers[1].Resources = api.ResourceRequirements{Requests: quantities("cpu", "100m")}
	pods[0].Spec.InitContainers = []api.Container{{Name: "init", Resources: api.ResourceRequirements{Requests: quantities("cpu", "1")}}}
	pods[len(pods)-1].Spec.Containers[0].Resources = api.ResourceRequirements{Requests: quantities("cpu", "100m", "memory", "70Mi"), Limits: quantities("memory", "170Mi")}
	finished := *fixturePods()[3] // Succeeded: not counted
	finished.Spec.NodeName = "node-1"
	pods = append(pods, finished)

	var b bytes.Buffer
	if err := DescribeNode(&b, fixtureNodes()[0], pods, podEvents()[3:], now); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "describe-node-with-pods", b.Bytes())
	if err := DescribeNode(&b, nil, nil, nil, now); err == nil {
		t.Error("DescribeNode(nil) = nil error; want one")
	}
}

func TestDescribeTimesInNowsLocation(t *testing.T) {
	p := fixturePods()[0]
	p.Status.StartTime = agoPtr(time.Hour)
	loc := time.FixedZone("CET", 3600)
	var b bytes.Buffer
	if err := Describe(&b, p, nil, now.In(loc)); err != nil {
		t.Fatal(err)
	}
	if want := "Sat, 01 Mar 2025 12:00:00 +0100"; !strings.Contains(b.String(), want) {
		t.Errorf("Describe in CET lacks %q:\n%s", want, b.String())
	}
}

func TestDescribeUnknownType(t *testing.T) {
	var b bytes.Buffer
	if err := Describe(&b, nil, nil, now); err == nil {
		t.Error("Describe(nil) = nil error; want one")
	}
}

func TestAnnotationsShortened(t *testing.T) {
	d := newDescriber(now)
	d.annotations(0, map[string]string{"long": strings.Repeat("é", 200), "multi": "first\nsecond"})
	var b bytes.Buffer
	if err := d.flushTo(&b); err != nil {
		t.Fatal(err)
	}
	want := "Annotations:  long: " + strings.Repeat("é", maxAnnotationLen) + "...\n" +
		"              multi: first...\n"
	if b.String() != want {
		t.Errorf("annotations =\n%q\nwant\n%q", b.String(), want)
	}
}
