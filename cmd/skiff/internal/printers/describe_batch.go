package printers

import (
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/table"
)

// Describers of the second-round kinds (ReplicaSet, StatefulSet, Job,
// CronJob, PodDisruptionBudget, claims, volumes, storage classes), laid
// out as kubectl describe lays them out.

func int32Or(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

func (d *describer) replicaSet(rs *api.ReplicaSet) {
	d.meta(&rs.ObjectMeta, true)
	d.line(0, "Selector:\t%s", selectorString(rs.Spec.Selector))
	d.labels(0, "Labels", rs.Labels)
	d.annotations(0, rs.Annotations)
	if c := controlledBy(&rs.ObjectMeta); c != "" {
		d.line(0, "Controlled By:\t%s", c)
	}
	d.line(0, "Replicas:\t%d current / %d desired", rs.Status.Replicas, int32Or(rs.Spec.Replicas, 1))
	d.line(0, "Pods Status:\t%d Running (ready) / %d Available", rs.Status.ReadyReplicas, rs.Status.AvailableReplicas)
	d.podTemplate(&rs.Spec.Template)
}

func (d *describer) statefulSet(s *api.StatefulSet) {
	d.meta(&s.ObjectMeta, true)
	d.line(0, "CreationTimestamp:\t%s", d.stamp(s.CreationTimestamp.Time))
	d.line(0, "Selector:\t%s", selectorString(s.Spec.Selector))
	d.labels(0, "Labels", s.Labels)
	d.annotations(0, s.Annotations)
	d.line(0, "Replicas:\t%d desired | %d total", int32Or(s.Spec.Replicas, 1), s.Status.Replicas)
	d.line(0, "Update Strategy:\t%s", s.Spec.UpdateStrategy.Type)
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		d.line(1, "Partition:\t%d", *ru.Partition)
	}
	d.line(0, "Pods Status:\t%d Ready / %d Updated", s.Status.ReadyReplicas, s.Status.UpdatedReplicas)
	d.podTemplate(&s.Spec.Template)
	if len(s.Spec.VolumeClaimTemplates) == 0 {
		d.line(0, "Volume Claims:\t<none>")
		return
	}
	d.line(0, "Volume Claims:")
	for _, c := range s.Spec.VolumeClaimTemplates {
		d.line(1, "Name:\t%s", c.Name)
		d.line(1, "StorageClass:\t%s", deref(c.Spec.StorageClassName))
		d.line(1, "Capacity:\t%s", quantity(c.Spec.Resources.Requests))
		d.line(1, "Access Modes:\t%s", strings.Join(c.Spec.AccessModes, ","))
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func quantity(rl api.ResourceList) string {
	if q, ok := rl[api.ResourceStorage]; ok {
		return q.String()
	}
	return ""
}

func (d *describer) job(j *api.Job) {
	d.meta(&j.ObjectMeta, true)
	d.line(0, "Selector:\t%s", selectorString(j.Spec.Selector))
	d.labels(0, "Labels", j.Labels)
	d.annotations(0, j.Annotations)
	if c := controlledBy(&j.ObjectMeta); c != "" {
		d.line(0, "Controlled By:\t%s", c)
	}
	d.line(0, "Parallelism:\t%d", int32Or(j.Spec.Parallelism, 1))
	if j.Spec.Completions != nil {
		d.line(0, "Completions:\t%d", *j.Spec.Completions)
	} else {
		d.line(0, "Completions:\t<unset>")
	}
	d.line(0, "Completion Mode:\t%s", deref(j.Spec.CompletionMode))
	if j.Spec.Suspend != nil {
		d.line(0, "Suspend:\t%s", boolWord(*j.Spec.Suspend))
	}
	d.line(0, "Backoff Limit:\t%d", int32Or(j.Spec.BackoffLimit, api.DefaultJobBackoffLimit))
	if t := j.Status.StartTime; t != nil {
		d.line(0, "Start Time:\t%s", d.stamp(t.Time))
	}
	if t := j.Status.CompletionTime; t != nil {
		d.line(0, "Completed At:\t%s", d.stamp(t.Time))
	}
	if v := j.Spec.ActiveDeadlineSeconds; v != nil {
		d.line(0, "Active Deadline Seconds:\t%ds", *v)
	}
	d.line(0, "Pods Statuses:\t%d Active (%d Ready) / %d Succeeded / %d Failed", j.Status.Active, int32Or(j.Status.Ready, 0), j.Status.Succeeded, j.Status.Failed)
	if j.Status.CompletedIndexes != "" {
		d.line(0, "Completed Indexes:\t%s", j.Status.CompletedIndexes)
	}
	d.podTemplate(&j.Spec.Template)
}

func (d *describer) cronJob(c *api.CronJob) {
	d.meta(&c.ObjectMeta, true)
	d.labels(0, "Labels", c.Labels)
	d.annotations(0, c.Annotations)
	d.line(0, "Schedule:\t%s", c.Spec.Schedule)
	if c.Spec.TimeZone != nil {
		d.line(0, "Time Zone:\t%s", *c.Spec.TimeZone)
	}
	d.line(0, "Concurrency Policy:\t%s", c.Spec.ConcurrencyPolicy)
	d.line(0, "Suspend:\t%s", boolWord(c.Spec.Suspend != nil && *c.Spec.Suspend))
	d.line(0, "Successful Job History Limit:\t%d", int32Or(c.Spec.SuccessfulJobsHistoryLimit, 3))
	d.line(0, "Failed Job History Limit:\t%d", int32Or(c.Spec.FailedJobsHistoryLimit, 1))
	if v := c.Spec.StartingDeadlineSeconds; v != nil {
		d.line(0, "Starting Deadline Seconds:\t%ds", *v)
	} else {
		d.line(0, "Starting Deadline Seconds:\t<unset>")
	}
	d.podTemplate(&c.Spec.JobTemplate.Spec.Template)
	if t := c.Status.LastScheduleTime; t != nil {
		d.line(0, "Last Schedule Time:\t%s", d.stamp(t.Time))
	} else {
		d.line(0, "Last Schedule Time:\t<unset>")
	}
	var active []string
	for _, r := range c.Status.Active {
		active = append(active, r.Name)
	}
	if len(active) == 0 {
		active = []string{"<none>"}
	}
	d.line(0, "Active Jobs:\t%s", strings.Join(active, ", "))
}

func (d *describer) budget(b *api.PodDisruptionBudget) {
	d.meta(&b.ObjectMeta, true)
	switch {
	case b.Spec.MinAvailable != nil:
		d.line(0, "Min available:\t%s", b.Spec.MinAvailable.String())
	case b.Spec.MaxUnavailable != nil:
		d.line(0, "Max unavailable:\t%s", b.Spec.MaxUnavailable.String())
	}
	d.line(0, "Selector:\t%s", selectorString(b.Spec.Selector))
	d.line(0, "Status:")
	d.line(1, "Allowed disruptions:\t%d", b.Status.DisruptionsAllowed)
	d.line(1, "Current:\t%d", b.Status.CurrentHealthy)
	d.line(1, "Desired:\t%d", b.Status.DesiredHealthy)
	d.line(1, "Total:\t%d", b.Status.ExpectedPods)
}

func (d *describer) claim(c *api.PersistentVolumeClaim) {
	d.meta(&c.ObjectMeta, true)
	d.line(0, "StorageClass:\t%s", deref(c.Spec.StorageClassName))
	d.line(0, "Status:\t%s", c.Status.Phase)
	d.line(0, "Volume:\t%s", c.Spec.VolumeName)
	d.labels(0, "Labels", c.Labels)
	d.annotations(0, c.Annotations)
	d.line(0, "Capacity:\t%s", quantity(c.Status.Capacity))
	d.line(0, "Access Modes:\t%s", strings.Join(c.Status.AccessModes, ","))
	d.line(0, "VolumeMode:\t%s", deref(c.Spec.VolumeMode))
}

func (d *describer) volume(v *api.PersistentVolume) {
	d.meta(&v.ObjectMeta, false)
	d.labels(0, "Labels", v.Labels)
	d.annotations(0, v.Annotations)
	d.line(0, "StorageClass:\t%s", v.Spec.StorageClassName)
	d.line(0, "Status:\t%s", v.Status.Phase)
	claim := ""
	if r := v.Spec.ClaimRef; r != nil {
		claim = r.Namespace + "/" + r.Name
	}
	d.line(0, "Claim:\t%s", claim)
	d.line(0, "Reclaim Policy:\t%s", v.Spec.PersistentVolumeReclaimPolicy)
	d.line(0, "Access Modes:\t%s", strings.Join(v.Spec.AccessModes, ","))
	d.line(0, "Capacity:\t%s", quantity(v.Spec.Capacity))
	if na := v.Spec.NodeAffinity; na != nil && na.Required != nil {
		d.line(0, "Node Affinity:")
		d.line(1, "Required Terms:")
		for _, t := range na.Required.NodeSelectorTerms {
			for _, r := range t.MatchExpressions {
				d.line(2, "Term 0:\t%s %s [%s]", r.Key, strings.ToLower(r.Operator), strings.Join(r.Values, ", "))
			}
		}
	}
	d.line(0, "Source:")
	switch {
	case v.Spec.HostPath != nil:
		d.line(1, "Type:\tHostPath (bare host directory volume)")
		d.line(1, "Path:\t%s", v.Spec.HostPath.Path)
	case v.Spec.Local != nil:
		d.line(1, "Type:\tLocalVolume (a persistent volume backed by local storage on a node)")
		d.line(1, "Path:\t%s", v.Spec.Local.Path)
	}
}

func (d *describer) storageClass(s *api.StorageClass) {
	d.line(0, "Name:\t%s", s.Name)
	d.line(0, "IsDefaultClass:\t%s", map[bool]string{true: "Yes", false: "No"}[s.Annotations[api.AnnotationDefaultStorageClass] == "true"])
	d.annotations(0, s.Annotations)
	d.line(0, "Provisioner:\t%s", s.Provisioner)
	d.line(0, "Parameters:\t%s", table.OrNone(formatLabels(s.Parameters)))
	d.line(0, "AllowVolumeExpansion:\t%s", boolWord(s.AllowVolumeExpansion != nil && *s.AllowVolumeExpansion))
	d.line(0, "ReclaimPolicy:\t%s", deref(s.ReclaimPolicy))
	d.line(0, "VolumeBindingMode:\t%s", deref(s.VolumeBindingMode))
}
