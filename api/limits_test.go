package api

import (
	"strings"
	"testing"
)

// cronLike has a CronJob's shape: a pod template two templates deep.
type cronLike struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       struct {
		JobTemplate struct {
			Spec struct {
				Template PodTemplateSpec `json:"template"`
			} `json:"spec"`
		} `json:"jobTemplate"`
	} `json:"spec"`
}

func TestValidateListLengthsFindsTemplates(t *testing.T) {
	many := make([]Container, MaxContainers+1)
	ds := &DaemonSet{}
	ds.Spec.Template.Spec.Containers = many
	c := &cronLike{}
	c.Spec.JobTemplate.Spec.Template.Spec.Containers = many
	tests := []struct {
		name string
		obj  Object
		want string
	}{
		{"pod", &Pod{Spec: PodSpec{Containers: many}}, "spec.containers"},
		{"daemonset", ds, "spec.template.spec.containers"},
		{"cronjob-shaped", c, "spec.jobTemplate.spec.template.spec.containers"},
		{"configmap", &ConfigMap{}, ""},
	}
	for _, tt := range tests {
		errs := ValidateListLengths(tt.obj)
		got := ""
		if len(errs) > 0 {
			got = errs[0].Field
		}
		if got != tt.want || (tt.want != "" && !strings.Contains(errs[0].Error(), "at most 100")) {
			t.Errorf("ValidateListLengths(%s) = %v; want a cause at %q", tt.name, errs, tt.want)
		}
	}
}
