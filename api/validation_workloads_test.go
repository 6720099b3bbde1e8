package api

import (
	"fmt"
	"testing"
)

func TestValidateDeployment(t *testing.T) {
	ru := "spec.strategy.rollingUpdate"
	tests := []struct {
		name   string
		mutate func(d *Deployment)
		want   []fe
	}{
		{"valid", func(d *Deployment) {}, nil},
		{"zero replicas", func(d *Deployment) { d.Spec.Replicas = ptrTo(int32(0)) }, nil},
		{"negative replicas", func(d *Deployment) { d.Spec.Replicas = ptrTo(int32(-1)) }, []fe{inv("spec.replicas")}},
		{"no selector", func(d *Deployment) { d.Spec.Selector = nil }, []fe{req("spec.selector")}},
		{"empty selector", func(d *Deployment) { d.Spec.Selector = &LabelSelector{} }, []fe{inv("spec.selector")}},
		{"selector mismatch", func(d *Deployment) { d.Spec.Template.Labels = map[string]string{"app": "api"} }, []fe{inv("spec.template.metadata.labels")}},
		{"selector no template labels", func(d *Deployment) { d.Spec.Template.Labels = nil }, []fe{inv("spec.template.metadata.labels")}},
		{"selector bad expression", func(d *Deployment) {
			d.Spec.Selector.MatchExpressions = []LabelSelectorRequirement{{Key: "tier", Operator: "Is", Values: []string{"front"}}, {Key: "x", Operator: LabelSelectorOpIn}}
		}, []fe{inv("spec.selector.matchExpressions[0].operator"), req("spec.selector.matchExpressions[1].values")}},
		{"selector expression values", func(d *Deployment) {
			d.Spec.Selector.MatchExpressions = []LabelSelectorRequirement{{Key: "tier", Operator: LabelSelectorOpExists, Values: []string{"front"}}, {Key: "x", Operator: LabelSelectorOpNotIn, Values: []string{"bad value"}}}
		}, []fe{forb("spec.selector.matchExpressions[0].values"), inv("spec.selector.matchExpressions[1].values[0]")}},
		{"selector matches expressions", func(d *Deployment) {
			d.Spec.Selector.MatchExpressions = []LabelSelectorRequirement{{Key: "tier", Operator: LabelSelectorOpIn, Values: []string{"front", "back"}}}
		}, nil},
		{"selector bad label", func(d *Deployment) { d.Spec.Selector.MatchLabels["bad key"] = "x" }, []fe{inv("spec.selector.matchLabels")}},
		{"template restart policy", func(d *Deployment) { d.Spec.Template.Spec.RestartPolicy = RestartPolicyNever }, []fe{nsup("spec.template.spec.restartPolicy")}},
		{"template active deadline", func(d *Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptrTo(int64(10)) }, []fe{inv("spec.template.spec.activeDeadlineSeconds")}},
		{"template container port", func(d *Deployment) { d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort = 0 }, []fe{req("spec.template.spec.containers[0].ports[0].containerPort")}},
		{"template image", func(d *Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }, []fe{req("spec.template.spec.containers[0].image")}},
		{"template annotations", func(d *Deployment) { d.Spec.Template.Annotations = map[string]string{"/x": ""} }, []fe{inv("spec.template.metadata.annotations")}},
		{"strategy type", func(d *Deployment) { d.Spec.Strategy.Type = "BlueGreen" }, []fe{nsup("spec.strategy.type")}},
		{"strategy type empty", func(d *Deployment) { d.Spec.Strategy.Type = "" }, []fe{req("spec.strategy.type")}},
		{"recreate with rollingUpdate", func(d *Deployment) { d.Spec.Strategy.Type = RecreateDeploymentStrategyType }, []fe{forb(ru)}},
		{"rolling without params", func(d *Deployment) { d.Spec.Strategy.RollingUpdate = nil }, []fe{req(ru)}},
		{"both zero", func(d *Deployment) {
			d.Spec.Strategy.RollingUpdate = &RollingUpdateDeployment{MaxUnavailable: ptrTo(FromInt(0)), MaxSurge: ptrTo(FromString("0%"))}
		}, []fe{inv(ru + ".maxUnavailable")}},
		{"bad percent", func(d *Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxSurge = ptrTo(FromString("25"))
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptrTo(FromString("120%"))
		}, []fe{inv(ru + ".maxSurge"), inv(ru + ".maxUnavailable")}},
		{"surge above 100%", func(d *Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptrTo(FromString("200%")) }, nil},
		{"negative int", func(d *Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = ptrTo(FromInt(-1)) }, []fe{inv(ru + ".maxSurge")}},
		{"huge percent", func(d *Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptrTo(FromString("99999999999999999999999%"))
		}, []fe{inv(ru + ".maxUnavailable")}},
		{"revision history", func(d *Deployment) { d.Spec.RevisionHistoryLimit = ptrTo(int32(-1)) }, []fe{inv("spec.revisionHistoryLimit")}},
		{"progress deadline", func(d *Deployment) { d.Spec.MinReadySeconds = 600 }, []fe{inv("spec.progressDeadlineSeconds")}},
		{"min ready negative", func(d *Deployment) { d.Spec.MinReadySeconds = -1 }, []fe{inv("spec.minReadySeconds")}},
		{"cluster scoped namespace missing", func(d *Deployment) { d.Namespace = "" }, []fe{req("metadata.namespace")}},
	}
	for _, tc := range tests {
		d := validDeployment()
		tc.mutate(d)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(d), tc.want...)
	}
}

func TestValidateDaemonSet(t *testing.T) {
	ru := "spec.updateStrategy.rollingUpdate"
	tests := []struct {
		name   string
		mutate func(ds *DaemonSet)
		want   []fe
	}{
		{"valid", func(ds *DaemonSet) {}, nil},
		{"no selector", func(ds *DaemonSet) { ds.Spec.Selector = nil }, []fe{req("spec.selector")}},
		{"empty selector", func(ds *DaemonSet) { ds.Spec.Selector = &LabelSelector{} }, []fe{inv("spec.selector")}},
		{"selector mismatch", func(ds *DaemonSet) { ds.Spec.Template.Labels["name"] = "other" }, []fe{inv("spec.template.metadata.labels")}},
		{"restart policy", func(ds *DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = RestartPolicyOnFailure }, []fe{nsup("spec.template.spec.restartPolicy")}},
		{"update strategy", func(ds *DaemonSet) { ds.Spec.UpdateStrategy.Type = "Replace" }, []fe{nsup("spec.updateStrategy.type")}},
		{"on delete", func(ds *DaemonSet) {
			ds.Spec.UpdateStrategy = DaemonSetUpdateStrategy{Type: OnDeleteDaemonSetStrategyType}
		}, nil},
		{"on delete with params", func(ds *DaemonSet) { ds.Spec.UpdateStrategy.Type = OnDeleteDaemonSetStrategyType }, []fe{forb(ru)}},
		{"rolling without params", func(ds *DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil }, []fe{req(ru)}},
		{"unavailable zero", func(ds *DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptrTo(FromString("0%")) }, []fe{req(ru + ".maxUnavailable")}},
		{"surge only", func(ds *DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &RollingUpdateDaemonSet{MaxUnavailable: ptrTo(FromInt(0)), MaxSurge: ptrTo(FromString("10%"))}
		}, nil},
		{"both set", func(ds *DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptrTo(FromInt(1)) }, []fe{inv(ru + ".maxSurge")}},
		{"percent over 100", func(ds *DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &RollingUpdateDaemonSet{MaxUnavailable: ptrTo(FromInt(0)), MaxSurge: ptrTo(FromString("101%"))}
		}, []fe{inv(ru + ".maxSurge")}},
		{"bad int or string", func(ds *DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = &IntOrString{Type: 7}
		}, []fe{inv(ru + ".maxUnavailable")}},
		{"template host network port", func(ds *DaemonSet) {
			ds.Spec.Template.Spec.Containers[0].Ports = []ContainerPort{{ContainerPort: 9100, HostPort: 9101, Protocol: ProtocolTCP}}
		}, []fe{inv("spec.template.spec.containers[0].ports[0].containerPort")}},
		{"revision history", func(ds *DaemonSet) { ds.Spec.RevisionHistoryLimit = ptrTo(int32(-5)) }, []fe{inv("spec.revisionHistoryLimit")}},
	}
	for _, tc := range tests {
		ds := validDaemonSet()
		tc.mutate(ds)
		checkErrs(t, fmt.Sprintf("Validate(%s)", tc.name), Validate(ds), tc.want...)
	}
}
