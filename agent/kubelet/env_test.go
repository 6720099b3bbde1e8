package kubelet

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "alpha"},
		{"x$(A)y$(B)z", "xalphaybetaz"},
		{"$(MISSING)", "$(MISSING)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$(A", "$(A"},
		{"$A", "$A"},
		{"cost: 5$", "cost: 5$"},
		{"$(EMPTY)-", "-"},
		{"$()", "$()"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, lookup); got != tt.want {
			t.Errorf("expand(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestMakeEnv(t *testing.T) {
	objects := &fakeObjects{
		secrets:    map[string]*api.Secret{"ns/db": {Data: map[string][]byte{"user": []byte("admin"), "password": []byte("pw")}}},
		configMaps: map[string]*api.ConfigMap{"ns/cfg": {Data: map[string]string{"MODE": "fast", "LEVEL": "3", "bad=name": "x"}}},
	}
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-1", Labels: map[string]string{"app": "web"}}}
	pod.Spec.NodeName = "node-1"
	c := &api.Container{
		Name: "c",
		Resources: api.ResourceRequirements{Limits: api.ResourceList{
			api.ResourceMemory: resource.MustParse("64Mi"), api.ResourceCPU: resource.MustParse("250m")}},
		EnvFrom: []api.EnvFromSource{
			{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "cfg"}}},
			{Prefix: "DB_", SecretRef: &api.SecretEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "db"}}},
			{SecretRef: &api.SecretEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "nope"}, Optional: ptr(true)}},
		},
		Env: []api.EnvVar{
			{Name: "MODE", Value: "slow-$(LEVEL)"}, // overrides envFrom, keeps its place
			{Name: "NAME", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "APP", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "NODE", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "IP", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "HOST", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "MEM_MI", ValueFrom: &api.EnvVarSource{ResourceFieldRef: &api.ResourceFieldSelector{Resource: "limits.memory", Divisor: ptr(resource.MustParse("1Mi"))}}},
			{Name: "CPU", ValueFrom: &api.EnvVarSource{ResourceFieldRef: &api.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "PW", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "db"}, Key: "password"}}},
			{Name: "OPT", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: &api.ConfigMapKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "cfg"}, Key: "missing", Optional: ptr(true)}}},
			{Name: "URL", Value: "http://$(DB_user):$(PW)@$(HOST)/$(UNSET)"},
		},
	}
	got, err := makeEnv(context.Background(), envInput{pod: pod, podIP: "10.0.0.5", hostIP: "192.0.2.1", objects: objects}, c)
	if err != nil {
		t.Fatalf("makeEnv() = %v", err)
	}
	var lines []string
	for _, e := range got {
		lines = append(lines, e.name+"="+e.value)
	}
	want := "LEVEL=3 MODE=slow-3 DB_password=pw DB_user=admin NAME=p APP=web NODE=node-1 IP=10.0.0.5 HOST=192.0.2.1 MEM_MI=64 CPU=1 PW=pw URL=http://admin:pw@192.0.2.1/$(UNSET)"
	if strings.Join(lines, " ") != want {
		t.Errorf("makeEnv() =\n %s\nwant\n %s", strings.Join(lines, " "), want)
	}
}

func TestMakeEnvMissingIsConfigError(t *testing.T) {
	objects := &fakeObjects{configMaps: map[string]*api.ConfigMap{"ns/cfg": {Data: map[string]string{"a": "1"}}}, secrets: map[string]*api.Secret{}}
	pod := &api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	tests := []struct {
		name string
		c    api.Container
	}{
		{"missing key", api.Container{Env: []api.EnvVar{{Name: "X", ValueFrom: &api.EnvVarSource{ConfigMapKeyRef: &api.ConfigMapKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "cfg"}, Key: "b"}}}}}},
		{"missing secret", api.Container{Env: []api.EnvVar{{Name: "X", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{LocalObjectReference: api.LocalObjectReference{Name: "s"}, Key: "k"}}}}}},
		{"missing envFrom", api.Container{EnvFrom: []api.EnvFromSource{{ConfigMapRef: &api.ConfigMapEnvSource{LocalObjectReference: api.LocalObjectReference{Name: "other"}}}}}},
		{"bad fieldRef", api.Container{Env: []api.EnvVar{{Name: "X", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "spec.bogus"}}}}}},
	}
	for _, tt := range tests {
		_, err := makeEnv(context.Background(), envInput{pod: pod, objects: objects}, &tt.c)
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%s: makeEnv() = %v; want ErrConfig", tt.name, err)
		}
	}
}

func TestCommandAndArgsExpansionReachRuntime(t *testing.T) {
	h := newHarness(t)
	pod := mkPod("u1", "c")
	pod.Spec.Containers[0].Env = []api.EnvVar{{Name: "GREETING", Value: "hello"}, {Name: "POD", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}
	pod.Spec.Containers[0].Command = []string{"sh", "-c"}
	pod.Spec.Containers[0].Args = []string{"echo $(GREETING) from $(POD) $$(GREETING)"}
	h.send(config.ADD, pod)
	h.settle()
	c, _ := h.newest("u1", "c")
	_, cfg, _ := h.rt.Container(c.ID)
	if got := strings.Join(cfg.Args, "|"); got != "echo hello from default $(GREETING)" {
		t.Errorf("args = %q; want expanded", got)
	}
	if cfg.Hostname != "pod-u1" {
		t.Errorf("hostname = %q; want pod-u1", cfg.Hostname)
	}
}

func TestPullPolicyDefault(t *testing.T) {
	tests := []struct {
		image string
		want  api.PullPolicy
	}{
		{"busybox", api.PullAlways},
		{"busybox:latest", api.PullAlways},
		{"busybox:1.36", api.PullIfNotPresent},
		{"localhost:5000/app", api.PullAlways},
		{"localhost:5000/app:v1", api.PullIfNotPresent},
		{"busybox@sha256:abcd", api.PullIfNotPresent},
	}
	for _, tt := range tests {
		if got := pullPolicy(&api.Container{Image: tt.image}); got != tt.want {
			t.Errorf("pullPolicy(%q) = %q; want %q", tt.image, got, tt.want)
		}
	}
	if got := pullPolicy(&api.Container{Image: "busybox", ImagePullPolicy: api.PullNever}); got != api.PullNever {
		t.Errorf("explicit Never = %q", got)
	}
}
