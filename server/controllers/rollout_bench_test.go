package controllers

import (
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// BenchmarkRolloutPlan10k is what a Deployment of 10 000 pods spends in
// each sync (it syncs on every one of its pods' changes) to group its pods
// and plan a rollout step, halfway through a rollout.
func BenchmarkRolloutPlan10k(b *testing.B) {
	pods := make([]*api.Pod, 10000)
	for i := range pods {
		hash := "new"
		if i%2 == 0 {
			hash = "old"
		}
		p := barePod(fmt.Sprintf("web-%05d", i), "n1")
		p.Labels = map[string]string{LabelPodTemplateHash: hash}
		if hash == "new" || i%3 != 0 {
			p.Status.Conditions = []api.PodCondition{{Type: api.PodReady, Status: api.ConditionTrue}}
		}
		pods[i] = p
	}
	surge, unavail := api.FromInt(100), api.FromInt(100)
	d := deployment("web", int32(len(pods)), "x")
	d.Spec.Strategy = api.DeploymentStrategy{Type: api.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &api.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}}
	b.ReportAllocs()
	for b.Loop() {
		g := groupPods(pods, "new", 0, epoch)
		if plan := planRollout(d, g); len(plan.delete) == 0 {
			b.Fatal("no old pod to delete")
		}
	}
}
