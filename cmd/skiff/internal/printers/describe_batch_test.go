package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// TestDescribeSecondRoundKinds: every kind skiff serves has a describer,
// and the lines users look for are there.
func TestDescribeSecondRoundKinds(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	two, one := int32(2), int32(1)
	mode := api.IndexedCompletion
	tz := "Europe/Berlin"
	class := "local-path"
	tests := []struct {
		obj  api.Object
		want []string
	}{
		{&api.Job{ObjectMeta: api.ObjectMeta{Name: "j", Namespace: "d"}, Spec: api.JobSpec{Completions: &two, Parallelism: &one, CompletionMode: &mode},
			Status: api.JobStatus{Succeeded: 1, CompletedIndexes: "0"}}, []string{"Completions:", "Indexed", "1 Succeeded", "Completed Indexes:  0"}},
		{&api.CronJob{ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "d"}, Spec: api.CronJobSpec{Schedule: "@daily", TimeZone: &tz, ConcurrencyPolicy: "Forbid"}},
			[]string{"Schedule:", "@daily", "Europe/Berlin", "Forbid", "Active Jobs:"}},
		{&api.ReplicaSet{ObjectMeta: api.ObjectMeta{Name: "r", Namespace: "d"}, Spec: api.ReplicaSetSpec{Replicas: &two}, Status: api.ReplicaSetStatus{Replicas: 1}},
			[]string{"Replicas:", "1 current / 2 desired"}},
		{&api.StatefulSet{ObjectMeta: api.ObjectMeta{Name: "s", Namespace: "d"}, Spec: api.StatefulSetSpec{Replicas: &two,
			VolumeClaimTemplates: []api.PersistentVolumeClaim{{ObjectMeta: api.ObjectMeta{Name: "data"}, Spec: api.PersistentVolumeClaimSpec{StorageClassName: &class}}}}},
			[]string{"2 desired", "Volume Claims:", "data", "local-path"}},
		{&api.PodDisruptionBudget{ObjectMeta: api.ObjectMeta{Name: "b", Namespace: "d"}, Spec: api.PodDisruptionBudgetSpec{MinAvailable: &api.IntOrString{Type: api.Int, IntVal: 1}}},
			[]string{"Min available:", "Allowed disruptions:"}},
		{&api.PersistentVolumeClaim{ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "d"}, Spec: api.PersistentVolumeClaimSpec{VolumeName: "pvc-1"}, Status: api.PersistentVolumeClaimStatus{Phase: "Bound"}},
			[]string{"Status:", "Bound", "pvc-1"}},
		{&api.PersistentVolume{ObjectMeta: api.ObjectMeta{Name: "pvc-1"}, Spec: api.PersistentVolumeSpec{HostPath: &api.HostPathVolumeSource{Path: "/v"},
			ClaimRef: &api.ObjectReference{Namespace: "d", Name: "c"}, PersistentVolumeReclaimPolicy: "Delete"}},
			[]string{"Claim:", "d/c", "HostPath", "/v", "Delete"}},
		{&api.StorageClass{ObjectMeta: api.ObjectMeta{Name: "local-path", Annotations: map[string]string{api.AnnotationDefaultStorageClass: "true"}}, Provisioner: api.LocalPathProvisioner},
			[]string{"IsDefaultClass:", "Yes", "skiff.io/local-path"}},
		{&api.ClusterRole{ObjectMeta: api.ObjectMeta{Name: "view"}, Rules: []api.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{"", "apps"}, Resources: []string{"pods"}}}},
			[]string{"PolicyRule:", "pods, pods.apps", "[get list]"}},
		{&api.RoleBinding{ObjectMeta: api.ObjectMeta{Name: "b", Namespace: "d"}, RoleRef: api.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []api.Subject{{Kind: "ServiceAccount", Name: "alice", Namespace: "d"}}}, []string{"ClusterRole", "view", "ServiceAccount  alice"}},
		{&api.EndpointSlice{ObjectMeta: api.ObjectMeta{Name: "web-1", Namespace: "d"}, AddressType: "IPv4", Endpoints: []api.Endpoint{{Addresses: []string{"10.42.0.5"}}}},
			[]string{"AddressType:", "IPv4", "10.42.0.5"}},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		if err := Describe(&b, tt.obj, nil, now); err != nil {
			t.Errorf("Describe(%T) = %v", tt.obj, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("Describe(%T) lacks %q:\n%s", tt.obj, w, b.String())
			}
		}
	}
	for _, r := range api.Resources() {
		var b bytes.Buffer
		if err := Describe(&b, r.New(), nil, now); err != nil {
			t.Errorf("Describe(empty %s) = %v; every served kind needs a describer", r.Kind, err)
		}
	}
}
