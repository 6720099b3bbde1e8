package printers

import "github.com/skiffhq/skiff/api"

func (d *describer) deployment(dep *api.Deployment) {
	d.meta(&dep.ObjectMeta, true)
	d.line(0, "CreationTimestamp:\t%s", d.stamp(dep.CreationTimestamp.Time))
	d.labels(0, "Labels", dep.Labels)
	d.annotations(0, dep.Annotations)
	d.line(0, "Selector:\t%s", selectorString(dep.Spec.Selector))
	st := dep.Status
	d.line(0, "Replicas:\t%d desired | %d updated | %d total | %d available | %d unavailable",
		desiredReplicas(dep), st.UpdatedReplicas, st.Replicas, st.AvailableReplicas, st.UnavailableReplicas)
	strategy := dep.Spec.Strategy.Type
	if strategy == "" {
		strategy = api.RollingUpdateDeploymentStrategyType
	}
	d.line(0, "StrategyType:\t%s", strategy)
	d.line(0, "MinReadySeconds:\t%d", dep.Spec.MinReadySeconds)
	if strategy == api.RollingUpdateDeploymentStrategyType {
		unavailable, surge := "25%", "25%"
		if ru := dep.Spec.Strategy.RollingUpdate; ru != nil {
			if ru.MaxUnavailable != nil {
				unavailable = ru.MaxUnavailable.String()
			}
			if ru.MaxSurge != nil {
				surge = ru.MaxSurge.String()
			}
		}
		d.line(0, "RollingUpdateStrategy:\t%s max unavailable, %s max surge", unavailable, surge)
	}
	if dep.Spec.Paused {
		d.line(0, "Paused:\ttrue")
	}
	d.podTemplate(&dep.Spec.Template)
	d.workloadConditions(st.Conditions)
}

func (d *describer) daemonSet(ds *api.DaemonSet) {
	d.meta(&ds.ObjectMeta, true)
	d.line(0, "Selector:\t%s", selectorString(ds.Spec.Selector))
	d.line(0, "Node-Selector:\t%s", formatLabels(ds.Spec.Template.Spec.NodeSelector))
	d.labels(0, "Labels", ds.Labels)
	d.annotations(0, ds.Annotations)
	st := ds.Status
	d.line(0, "Desired Number of Nodes Scheduled:\t%d", st.DesiredNumberScheduled)
	d.line(0, "Current Number of Nodes Scheduled:\t%d", st.CurrentNumberScheduled)
	d.line(0, "Number of Nodes Scheduled with Up-to-date Pods:\t%d", st.UpdatedNumberScheduled)
	d.line(0, "Number of Nodes Scheduled with Available Pods:\t%d", st.NumberAvailable)
	d.line(0, "Number of Nodes Misscheduled:\t%d", st.NumberMisscheduled)
	strategy := ds.Spec.UpdateStrategy.Type
	if strategy == "" {
		strategy = api.RollingUpdateDaemonSetStrategyType
	}
	d.line(0, "Update Strategy:\t%s", strategy)
	d.podTemplate(&ds.Spec.Template)
	d.workloadConditions(st.Conditions)
}

// podTemplate summarizes the pod a workload stamps out.
func (d *describer) podTemplate(t *api.PodTemplateSpec) {
	d.line(0, "Pod Template:")
	d.labels(1, "Labels", t.Labels)
	if len(t.Annotations) > 0 {
		d.annotations(1, t.Annotations)
	}
	if len(t.Spec.InitContainers) > 0 {
		d.line(1, "Init Containers:")
		for _, c := range t.Spec.InitContainers {
			d.container(2, c, nil)
		}
	}
	d.line(1, "Containers:")
	for _, c := range t.Spec.Containers {
		d.container(2, c, nil)
	}
	d.volumes(1, t.Spec.Volumes)
	if len(t.Spec.NodeSelector) > 0 {
		d.labels(1, "Node-Selectors", t.Spec.NodeSelector)
	}
	if len(t.Spec.Tolerations) > 0 {
		d.multiline(1, "Tolerations", tolerationStrings(t.Spec.Tolerations))
	}
}

func (d *describer) workloadConditions(conds []api.DeploymentCondition) {
	if len(conds) == 0 {
		return
	}
	d.line(0, "Conditions:")
	d.line(1, "Type\tStatus\tReason")
	d.line(1, "----\t------\t------")
	for _, c := range conds {
		d.line(1, "%s\t%s\t%s", c.Type, c.Status, c.Reason)
	}
}
