package api

import (
	"github.com/skiffhq/skiff/api/cron"
	"github.com/skiffhq/skiff/api/labels"
)

// Labels and annotations of Jobs and their pods, as Kubernetes names them.
const (
	LabelJobControllerUID       = "batch.kubernetes.io/controller-uid"
	LabelJobName                = "batch.kubernetes.io/job-name"
	LabelLegacyControllerUID    = "controller-uid"
	LabelLegacyJobName          = "job-name"
	LabelJobCompletionIndex     = "batch.kubernetes.io/job-completion-index"
	AnnotationJobCompletionIdx  = "batch.kubernetes.io/job-completion-index"
	AnnotationCronJobScheduled  = "batch.kubernetes.io/cronjob-scheduled-timestamp"
	DefaultJobBackoffLimit      = int32(6)
	defaultSuccessfulJobsLimit  = int32(3)
	defaultFailedJobsLimit      = int32(1)
	maxCronJobNameLength        = 52
	maxIndexedJobCompletions    = 100000
	podReplacementTerminatingOr = "TerminatingOrFailed"
)

// SetDefaultsJob defaults a batch/v1 Job as Kubernetes does: parallelism
// 1 (and completions 1 when neither is set), backoffLimit 6,
// completionMode NonIndexed, suspend false, and — once the Job has a UID,
// unless manualSelector — a selector on its UID that the template's labels
// carry. j may be nil.
func SetDefaultsJob(j *Job) {
	if j == nil {
		return
	}
	setDefaultsJobSpec(&j.Spec)
	manual := j.Spec.ManualSelector != nil && *j.Spec.ManualSelector
	if j.UID != "" && !manual && j.Spec.Selector == nil {
		j.Spec.Selector = &LabelSelector{MatchLabels: map[string]string{LabelJobControllerUID: j.UID}}
		t := &j.Spec.Template
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[LabelJobControllerUID] = j.UID
		t.Labels[LabelJobName] = j.Name
		t.Labels[LabelLegacyControllerUID] = j.UID
		t.Labels[LabelLegacyJobName] = j.Name
		if len(j.Labels) == 0 {
			j.Labels = map[string]string{}
			for k, v := range t.Labels {
				j.Labels[k] = v
			}
		}
	}
}

func setDefaultsJobSpec(s *JobSpec) {
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptrTo(int32(1))
	}
	if s.Parallelism == nil {
		s.Parallelism = ptrTo(int32(1))
	}
	if s.BackoffLimit == nil {
		s.BackoffLimit = ptrTo(DefaultJobBackoffLimit)
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptrTo(NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptrTo(false)
	}
	if s.PodReplacementPolicy == nil {
		s.PodReplacementPolicy = ptrTo(podReplacementTerminatingOr)
	}
	SetDefaultsPodSpec(&s.Template.Spec)
}

// SetDefaultsCronJob defaults a batch/v1 CronJob: concurrencyPolicy Allow,
// suspend false, history limits 3 and 1, and its job template. c may be
// nil.
func SetDefaultsCronJob(c *CronJob) {
	if c == nil {
		return
	}
	s := &c.Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptrTo(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptrTo(defaultSuccessfulJobsLimit)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptrTo(defaultFailedJobsLimit)
	}
	setDefaultsJobSpec(&s.JobTemplate.Spec)
}

func validateJob(j *Job) FieldErrors {
	errs := validateObjectMeta(&j.ObjectMeta, true, labels.IsDNS1123Subdomain, NewPath("metadata"))
	return append(errs, validateJobSpec(&j.Spec, true, NewPath("spec"))...)
}

// validateJobSpec checks a Job's spec; a CronJob's job template has no
// selector yet (withSelector false).
func validateJobSpec(s *JobSpec, withSelector bool, p Path) FieldErrors {
	var errs FieldErrors
	for _, f := range []struct {
		name string
		v    *int32
	}{{"parallelism", s.Parallelism}, {"completions", s.Completions}, {"backoffLimit", s.BackoffLimit}, {"ttlSecondsAfterFinished", s.TTLSecondsAfterFinished}} {
		if f.v != nil {
			errs = append(errs, validateNonnegative(int64(*f.v), p.Child(f.name))...)
		}
	}
	if v := s.ActiveDeadlineSeconds; v != nil && *v <= 0 {
		errs = append(errs, Invalid(p.Child("activeDeadlineSeconds"), *v, "must be greater than 0"))
	}
	if m := s.CompletionMode; m != nil {
		switch *m {
		case NonIndexedCompletion:
		case IndexedCompletion:
			if s.Completions == nil {
				errs = append(errs, Required(p.Child("completions"), "when completion mode is Indexed"))
			} else if *s.Completions > maxIndexedJobCompletions {
				errs = append(errs, Invalid(p.Child("completions"), *s.Completions, "must be less than or equal to 100000 when completion mode is Indexed"))
			}
		default:
			errs = append(errs, NotSupported(p.Child("completionMode"), *m, []string{NonIndexedCompletion, IndexedCompletion}))
		}
	}
	if r := s.PodReplacementPolicy; r != nil && *r != podReplacementTerminatingOr && *r != "Failed" {
		errs = append(errs, NotSupported(p.Child("podReplacementPolicy"), *r, []string{podReplacementTerminatingOr, "Failed"}))
	}
	tp := p.Child("template")
	if withSelector {
		// Without a selector (and without manualSelector) the server
		// generates one on create; see SetDefaultsJob.
		sp := p.Child("selector")
		manual := s.ManualSelector != nil && *s.ManualSelector
		switch {
		case s.Selector == nil && manual:
			errs = append(errs, Required(sp, "when manualSelector is true"))
		case s.Selector == nil:
		default:
			errs = append(errs, validateJobSelector(s, sp, tp)...)
		}
	}
	errs = append(errs, validatePodTemplate(&s.Template, tp)...)
	rp := tp.Child("spec").Child("restartPolicy")
	switch s.Template.Spec.RestartPolicy {
	case RestartPolicyNever, RestartPolicyOnFailure, "":
		// An empty policy is already reported as Required.
	default:
		errs = append(errs, NotSupported(rp, string(s.Template.Spec.RestartPolicy), []string{string(RestartPolicyOnFailure), string(RestartPolicyNever)}))
	}
	return errs
}

// validateJobSelector checks a Job's selector and that its template's
// labels match it.
func validateJobSelector(s *JobSpec, sp, tp Path) FieldErrors {
	var errs FieldErrors
	if selErrs := validateLabelSelector(s.Selector, sp); len(selErrs) > 0 {
		errs = append(errs, selErrs...)
	} else if sel, err := s.Selector.AsSelector(); err != nil || !sel.Matches(labels.Set(s.Template.Labels)) {
		errs = append(errs, Invalid(tp.Child("metadata").Child("labels"), labels.Set(s.Template.Labels).String(), "`selector` does not match template `labels`"))
	}
	return errs
}

func validateCronJob(c *CronJob) FieldErrors {
	mp := NewPath("metadata")
	errs := validateObjectMeta(&c.ObjectMeta, true, labels.IsDNS1123Subdomain, mp)
	if len(c.Name) > maxCronJobNameLength {
		errs = append(errs, Invalid(mp.Child("name"), c.Name, "must be no more than 52 characters"))
	}
	p := NewPath("spec")
	s := &c.Spec
	if s.Schedule == "" {
		errs = append(errs, Required(p.Child("schedule"), ""))
	} else if _, err := cron.Parse(s.Schedule); err != nil {
		errs = append(errs, Invalid(p.Child("schedule"), s.Schedule, err.Error()))
	}
	if s.TimeZone != nil {
		if _, err := cron.LoadLocation(s.TimeZone); err != nil || *s.TimeZone == "" {
			errs = append(errs, Invalid(p.Child("timeZone"), *s.TimeZone, "unknown time zone"))
		}
	}
	switch s.ConcurrencyPolicy {
	case AllowConcurrent, ForbidConcurrent, ReplaceConcurrent:
	case "":
		errs = append(errs, Required(p.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, NotSupported(p.Child("concurrencyPolicy"), s.ConcurrencyPolicy, []string{AllowConcurrent, ForbidConcurrent, ReplaceConcurrent}))
	}
	if v := s.StartingDeadlineSeconds; v != nil {
		errs = append(errs, validateNonnegative(*v, p.Child("startingDeadlineSeconds"))...)
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{{"successfulJobsHistoryLimit", s.SuccessfulJobsHistoryLimit}, {"failedJobsHistoryLimit", s.FailedJobsHistoryLimit}} {
		if f.v != nil {
			errs = append(errs, validateNonnegative(int64(*f.v), p.Child(f.name))...)
		}
	}
	return append(errs, validateJobSpec(&s.JobTemplate.Spec, false, p.Child("jobTemplate").Child("spec"))...)
}

// validateJobUpdate keeps what Kubernetes keeps fixed on a Job: the
// selector, the completion mode and (unless the Job is suspended) the
// pod template.
func validateJobUpdate(n, o *Job) FieldErrors {
	p := NewPath("spec")
	errs := validateSelectorUpdate(n.Spec.Selector, o.Spec.Selector)
	if !semanticEqual(n.Spec.CompletionMode, o.Spec.CompletionMode) {
		errs = append(errs, Invalid(p.Child("completionMode"), nil, fieldImmutableErrorMsg))
	}
	suspended := o.Spec.Suspend != nil && *o.Spec.Suspend
	if !suspended && !semanticEqual(n.Spec.Template, o.Spec.Template) {
		errs = append(errs, Invalid(p.Child("template"), nil, fieldImmutableErrorMsg))
	}
	return errs
}
