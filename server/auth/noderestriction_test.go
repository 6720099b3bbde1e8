package auth

import (
	"slices"
	"testing"

	"github.com/skiffhq/skiff/api"
)

func TestIsAllowedSelfLabel(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"kubernetes.io/hostname", true},
		{"kubernetes.io/arch", true},
		{"topology.kubernetes.io/zone", true},
		{"node.kubernetes.io/instance-type", true},
		{"kubelet.kubernetes.io/anything", true},
		{"node.kubernetes.io/anything", true},
		{"gpu", true},
		{"example.com/rack", true},
		{"node-role.kubernetes.io/control-plane", false},
		{"node-role.kubernetes.io/master", false},
		{"node-restriction.kubernetes.io/trusted", false},
		{"kubernetes.io/role", false},
		{"k8s.io/x", false},
		{"sub.K8S.io/x", false},
	}
	for _, tt := range tests {
		if got := IsAllowedSelfLabel(tt.key); got != tt.want {
			t.Errorf("IsAllowedSelfLabel(%q) = %v; want %v", tt.key, got, tt.want)
		}
	}
}

func TestForbiddenSelfLabelChanges(t *testing.T) {
	old := map[string]string{"node-role.kubernetes.io/worker": "", "gpu": "no"}
	tests := []struct {
		name string
		next map[string]string
		want []string
	}{
		{"unchanged", map[string]string{"node-role.kubernetes.io/worker": "", "gpu": "no"}, nil},
		{"removed reserved", map[string]string{"gpu": "no"}, []string{"node-role.kubernetes.io/worker"}},
		{"changed free", map[string]string{"node-role.kubernetes.io/worker": "", "gpu": "yes"}, nil},
		{"added reserved", map[string]string{"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": ""}, []string{"node-role.kubernetes.io/control-plane"}},
	}
	for _, tt := range tests {
		if got := ForbiddenSelfLabelChanges(old, tt.next); !slices.Equal(got, tt.want) {
			t.Errorf("ForbiddenSelfLabelChanges(%s) = %q; want %q", tt.name, got, tt.want)
		}
	}
}

func TestMirrorPodReferences(t *testing.T) {
	pod := &api.Pod{Spec: api.PodSpec{
		Volumes: []api.Volume{
			{Name: "h", VolumeSource: api.VolumeSource{HostPath: &api.HostPathVolumeSource{Path: "/x"}}},
			{Name: "s", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "s"}}},
		},
		Containers: []api.Container{{Name: "c", Env: []api.EnvVar{
			{Name: "A", ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "B", ValueFrom: &api.EnvVarSource{SecretKeyRef: &api.SecretKeySelector{}}},
		}}},
	}}
	want := []string{"spec.volumes[1].secret", "spec.containers[0].env[1].valueFrom"}
	if got := MirrorPodReferences(pod); !slices.Equal(got, want) {
		t.Errorf("MirrorPodReferences = %q; want %q", got, want)
	}
}
