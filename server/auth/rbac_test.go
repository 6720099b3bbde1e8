package auth

import (
	"testing"

	"github.com/skiffhq/skiff/api"
)

func TestRuleAllows(t *testing.T) {
	podsRead := api.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}}
	named := api.PolicyRule{Verbs: []string{"get", "update"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"app"}}
	star := api.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
	anyStatus := api.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"apps"}, Resources: []string{"*/status"}}
	metrics := api.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics", "/debug/*"}}
	tests := []struct {
		name string
		rule api.PolicyRule
		a    Attributes
		want bool
	}{
		{"get pods", podsRead, Attributes{Verb: "get", Resource: "pods", Name: "p"}, true},
		{"list pods", podsRead, Attributes{Verb: "list", Resource: "pods"}, true},
		{"pods/log", podsRead, Attributes{Verb: "get", Resource: "pods", Subresource: "log", Name: "p"}, true},
		{"pods/exec not granted by pods", podsRead, Attributes{Verb: "get", Resource: "pods", Subresource: "exec"}, false},
		{"delete pods", podsRead, Attributes{Verb: "delete", Resource: "pods", Name: "p"}, false},
		{"other group", podsRead, Attributes{Verb: "get", APIGroup: "apps", Resource: "pods"}, false},
		{"named get", named, Attributes{Verb: "get", Resource: "configmaps", Name: "app"}, true},
		{"other name", named, Attributes{Verb: "get", Resource: "configmaps", Name: "db"}, false},
		{"names never grant list", named, Attributes{Verb: "list", Resource: "configmaps"}, false},
		{"star", star, Attributes{Verb: "deletecollection", APIGroup: "x.io", Resource: "things", Subresource: "status"}, true},
		{"star is not non-resource", star, Attributes{Verb: "get", NonResource: true, Path: "/metrics"}, false},
		{"*/status", anyStatus, Attributes{Verb: "get", APIGroup: "apps", Resource: "deployments", Subresource: "status"}, true},
		{"*/status not the object", anyStatus, Attributes{Verb: "get", APIGroup: "apps", Resource: "deployments"}, false},
		{"metrics", metrics, Attributes{Verb: "get", NonResource: true, Path: "/metrics"}, true},
		{"prefix", metrics, Attributes{Verb: "get", NonResource: true, Path: "/debug/pprof"}, true},
		{"other path", metrics, Attributes{Verb: "get", NonResource: true, Path: "/healthz"}, false},
		{"urls are not resources", metrics, Attributes{Verb: "get", Resource: "metrics"}, false},
	}
	for _, tt := range tests {
		if got := RuleAllows(&tt.rule, tt.a); got != tt.want {
			t.Errorf("RuleAllows(%s) = %v; want %v", tt.name, got, tt.want)
		}
	}
}

func TestCovers(t *testing.T) {
	admin := adminRules()
	tests := []struct {
		name  string
		owner []api.PolicyRule
		rule  api.PolicyRule
		want  bool
	}{
		{"view within admin", admin, viewRules()[0], true},
		{"star not within admin", admin, api.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"pods"}}, false},
		{"nodes not within admin", admin, api.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}, false},
		{"named within unnamed", admin, api.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"x"}}, true},
		{"unnamed not within named", []api.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"x"}}},
			api.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}, false},
		{"anything within cluster-admin", DefaultClusterRoles()[0].Rules, api.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}, true},
	}
	for _, tt := range tests {
		if got := Covers(tt.owner, tt.rule); got != tt.want {
			t.Errorf("Covers(%s) = %v; want %v", tt.name, got, tt.want)
		}
	}
}
