package api

// Job runs pods until a number of them succeed (batch/v1).
type Job struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       JobSpec   `json:"spec"`
	Status     JobStatus `json:"status,omitzero"`
}

// Job completion modes.
const (
	NonIndexedCompletion = "NonIndexed"
	IndexedCompletion    = "Indexed"
)

// JobSpec is the desired state of a Job.
type JobSpec struct {
	// Most pods the Job runs at once. Default 1.
	Parallelism *int32 `json:"parallelism,omitempty"`
	// How many pods must succeed; unset makes a work queue (done when one succeeds and none runs).
	Completions *int32 `json:"completions,omitempty"`
	// Seconds since the Job started after which it fails (DeadlineExceeded) and its pods are stopped.
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// Failed pods (or container restarts with OnFailure) after which the Job fails (BackoffLimitExceeded). Default 6; a retry waits 10 s, doubling up to 6 minutes.
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// Selects the Job's pods; generated from the Job's UID unless manualSelector.
	Selector *LabelSelector `json:"selector,omitempty"`
	// Use the given selector instead of generating one.
	ManualSelector *bool `json:"manualSelector,omitempty"`
	// The pods the Job runs; restartPolicy must be Never or OnFailure.
	Template PodTemplateSpec `json:"template"`
	// Seconds after the Job finished (Complete or Failed) when it is deleted with its pods.
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// NonIndexed (default) or Indexed: each pod gets an index 0..completions-1 (annotation, label, JOB_COMPLETION_INDEX), and each index must succeed once.
	CompletionMode *string `json:"completionMode,omitempty"`
	// While true the Job runs no pods (its running pods are stopped) and its deadline does not run.
	Suspend *bool `json:"suspend,omitempty"`
	// PodReplacementPolicy is stored and returned; skiff replaces a
	// failed pod once it has stopped (TerminatingOrFailed and Failed
	// behave alike).
	PodReplacementPolicy *string `json:"podReplacementPolicy,omitempty"`
}

// Job condition types.
const (
	JobComplete  = "Complete"
	JobFailed    = "Failed"
	JobSuspended = "Suspended"
)

// JobStatus is the observed state of a Job.
type JobStatus struct {
	Conditions       []JobCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	StartTime        *Time          `json:"startTime,omitempty"`
	CompletionTime   *Time          `json:"completionTime,omitempty"`
	Active           int32          `json:"active,omitempty"`
	Succeeded        int32          `json:"succeeded,omitempty"`
	Failed           int32          `json:"failed,omitempty"`
	Terminating      *int32         `json:"terminating,omitempty"`
	CompletedIndexes string         `json:"completedIndexes,omitempty"`
	Ready            *int32         `json:"ready,omitempty"`
}

// JobCondition is one condition of a Job (Complete, Failed, Suspended).
type JobCondition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	LastProbeTime      Time   `json:"lastProbeTime,omitzero"`
	LastTransitionTime Time   `json:"lastTransitionTime,omitzero"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
}

// CronJob creates Jobs on a schedule (batch/v1).
type CronJob struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       CronJobSpec   `json:"spec"`
	Status     CronJobStatus `json:"status,omitzero"`
}

// CronJob concurrency policies.
const (
	AllowConcurrent   = "Allow"
	ForbidConcurrent  = "Forbid"
	ReplaceConcurrent = "Replace"
)

// CronJobSpec is the desired state of a CronJob.
type CronJobSpec struct {
	// Five cron fields (minute hour day-of-month month day-of-week) or a macro (@hourly, @daily, @weekly, @monthly, @yearly).
	Schedule string `json:"schedule"`
	// Time zone of the schedule (an IANA name such as Europe/Berlin); default the server's.
	TimeZone *string `json:"timeZone,omitempty"`
	// A run missed by more than this many seconds is skipped.
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
	// Allow (default), Forbid (skip a run while one is active) or Replace (delete the active run).
	ConcurrencyPolicy string `json:"concurrencyPolicy,omitempty"`
	// While true no new Jobs are started.
	Suspend *bool `json:"suspend,omitempty"`
	// The Job each run creates.
	JobTemplate JobTemplateSpec `json:"jobTemplate"`
	// Finished successful Jobs kept. Default 3.
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`
	// Failed Jobs kept. Default 1.
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`
}

// JobTemplateSpec is the Job a CronJob creates.
type JobTemplateSpec struct {
	ObjectMeta `json:"metadata,omitzero"`
	Spec       JobSpec `json:"spec"`
}

// CronJobStatus is the observed state of a CronJob.
type CronJobStatus struct {
	Active             []ObjectReference `json:"active,omitempty"`
	LastScheduleTime   *Time             `json:"lastScheduleTime,omitempty"`
	LastSuccessfulTime *Time             `json:"lastSuccessfulTime,omitempty"`
}
