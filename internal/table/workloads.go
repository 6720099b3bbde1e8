package table

import (
	"fmt"
	"time"

	"github.com/skiffhq/skiff/api"
)

// workloadLayout returns the tables of the second-round workload kinds
// (ReplicaSet, Job, CronJob), as Kubernetes prints them.
func workloadLayout(kind string) (layout, bool) {
	switch kind {
	case "ReplicaSet":
		return layout{row: typed(replicaSetRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Desired", "integer", "Number of desired pods."),
			col("Current", "integer", "Number of actual pods."),
			col("Ready", "integer", "Number of pods ready."),
			col("Age", "string", descAge),
			wide("Containers", "string", descContainers),
			wide("Images", "string", descImages),
			wide("Selector", "string", "Label selector for the replica set's pods."),
		}}, true
	case "Job":
		return layout{row: typed(jobRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Status", "string", "Status of the job."),
			col("Completions", "string", "The completion status of the job."),
			col("Duration", "string", "Time required to complete the job."),
			col("Age", "string", descAge),
			wide("Containers", "string", descContainers),
			wide("Images", "string", descImages),
			wide("Selector", "string", "Label selector for the job's pods."),
		}}, true
	case "CronJob":
		return layout{row: typed(cronJobRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Schedule", "string", "The schedule for running the job."),
			col("Timezone", "string", "The time zone for running the job."),
			col("Suspend", "boolean", "Whether the cron job is suspended."),
			col("Active", "integer", "Number of running jobs."),
			col("Last Schedule", "string", "When the job was last scheduled."),
			col("Age", "string", descAge),
			wide("Containers", "string", descContainers),
			wide("Images", "string", descImages),
			wide("Selector", "string", "Label selector for the job's pods."),
		}}, true
	case "PodDisruptionBudget":
		return layout{row: typed(pdbRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Min Available", "string", "The minimum number of pods that must be available."),
			col("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
			col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
			col("Age", "string", descAge),
		}}, true
	}
	return layout{}, false
}

// pdbRow is NAME MIN-AVAILABLE MAX-UNAVAILABLE ALLOWED-DISRUPTIONS AGE.
func pdbRow(b *api.PodDisruptionBudget, now time.Time) api.TableRow {
	minA, maxU := "N/A", "N/A"
	if v := b.Spec.MinAvailable; v != nil {
		minA = v.String()
	}
	if v := b.Spec.MaxUnavailable; v != nil {
		maxU = v.String()
	}
	return api.TableRow{Cells: []any{b.Name, minA, maxU, int64(b.Status.DisruptionsAllowed), Age(b.CreationTimestamp.Time, now)}}
}

// replicaSetRow is NAME DESIRED CURRENT READY AGE | CONTAINERS IMAGES
// SELECTOR.
func replicaSetRow(rs *api.ReplicaSet, now time.Time) api.TableRow {
	desired := int32(1)
	if rs.Spec.Replicas != nil {
		desired = *rs.Spec.Replicas
	}
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return api.TableRow{Cells: []any{
		rs.Name, int64(desired), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas), Age(rs.CreationTimestamp.Time, now),
		names, images, SelectorString(rs.Spec.Selector),
	}}
}

// JobStatus is the STATUS cell of a Job: Complete, Failed, Terminating,
// Suspended or Running.
func JobStatus(j *api.Job) string {
	has := func(typ string) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == typ && c.Status == api.ConditionTrue {
				return true
			}
		}
		return false
	}
	switch {
	case has(api.JobComplete):
		return "Complete"
	case has(api.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(api.JobSuspended):
		return "Suspended"
	}
	return "Running"
}

// jobRow is NAME STATUS COMPLETIONS DURATION AGE | CONTAINERS IMAGES
// SELECTOR.
func jobRow(j *api.Job, now time.Time) api.TableRow {
	var completions string
	switch {
	case j.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1:
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	default:
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var dur string
	switch st := j.Status; {
	case st.StartTime == nil:
	case st.CompletionTime == nil:
		dur = HumanDuration(now.Sub(st.StartTime.Time))
	default:
		dur = HumanDuration(st.CompletionTime.Sub(st.StartTime.Time))
	}
	names, images := containerCells(j.Spec.Template.Spec.Containers)
	return api.TableRow{Cells: []any{
		j.Name, JobStatus(j), completions, dur, Age(j.CreationTimestamp.Time, now),
		names, images, SelectorString(j.Spec.Selector),
	}}
}

// cronJobRow is NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST-SCHEDULE AGE |
// CONTAINERS IMAGES SELECTOR.
func cronJobRow(c *api.CronJob, now time.Time) api.TableRow {
	tz := none
	if c.Spec.TimeZone != nil {
		tz = *c.Spec.TimeZone
	}
	last := none
	if t := c.Status.LastScheduleTime; t != nil {
		last = Age(t.Time, now)
	}
	suspend := "<unset>"
	if c.Spec.Suspend != nil {
		suspend = "False"
		if *c.Spec.Suspend {
			suspend = "True"
		}
	}
	js := &c.Spec.JobTemplate.Spec
	names, images := containerCells(js.Template.Spec.Containers)
	return api.TableRow{Cells: []any{
		c.Name, c.Spec.Schedule, tz, suspend, int64(len(c.Status.Active)), last, Age(c.CreationTimestamp.Time, now),
		names, images, SelectorString(js.Selector),
	}}
}
