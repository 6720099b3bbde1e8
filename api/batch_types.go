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
	Parallelism             *int32          `json:"parallelism,omitempty"`
	Completions             *int32          `json:"completions,omitempty"`
	ActiveDeadlineSeconds   *int64          `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit            *int32          `json:"backoffLimit,omitempty"`
	Selector                *LabelSelector  `json:"selector,omitempty"`
	ManualSelector          *bool           `json:"manualSelector,omitempty"`
	Template                PodTemplateSpec `json:"template"`
	TTLSecondsAfterFinished *int32          `json:"ttlSecondsAfterFinished,omitempty"`
	CompletionMode          *string         `json:"completionMode,omitempty"`
	Suspend                 *bool           `json:"suspend,omitempty"`
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
	Schedule                   string          `json:"schedule"`
	TimeZone                   *string         `json:"timeZone,omitempty"`
	StartingDeadlineSeconds    *int64          `json:"startingDeadlineSeconds,omitempty"`
	ConcurrencyPolicy          string          `json:"concurrencyPolicy,omitempty"`
	Suspend                    *bool           `json:"suspend,omitempty"`
	JobTemplate                JobTemplateSpec `json:"jobTemplate"`
	SuccessfulJobsHistoryLimit *int32          `json:"successfulJobsHistoryLimit,omitempty"`
	FailedJobsHistoryLimit     *int32          `json:"failedJobsHistoryLimit,omitempty"`
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
