package controllers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
)

// Job back-off, as Kubernetes' job controller: a failed pod's
// replacement waits 10 s, doubling per failure up to 6 minutes.
const (
	jobBackoffBase = 10 * time.Second
	jobBackoffMax  = 6 * time.Minute
)

// Job event reasons and condition reasons, as Kubernetes writes them.
const (
	reasonBackoffLimitExceeded = "BackoffLimitExceeded"
	reasonJobDeadlineExceeded  = "DeadlineExceeded"
	reasonJobSuspended         = "JobSuspended"
	reasonJobResumed           = "JobResumed"
	reasonCompleted            = "Completed"
)

// envJobCompletionIndex is the variable an Indexed Job's containers get.
const envJobCompletionIndex = "JOB_COMPLETION_INDEX"

// JobController runs each Job's pods until enough succeed (Complete) or
// too many fail or the deadline passes (Failed), and deletes finished
// Jobs after ttlSecondsAfterFinished.
type JobController struct {
	cfg   Config
	in    *Informers
	pods  podWriter
	rec   EventRecorder
	queue *Queue
}

func newJobController(cfg Config, in *Informers, w podWriter) *JobController {
	c := &JobController{cfg: cfg, in: in, pods: w, rec: cfg.recorder("job-controller"), queue: NewQueue(cfg.Clock)}
	watchOwnerAndPods(in.Jobs, in.Pods, "Job", c.queue)
	return c
}

func (c *JobController) worker() *worker {
	return &worker{name: "job", queue: c.queue, sync: c.sync}
}

// jobBackoff is how long a Job waits after its failures-th failed pod
// before it makes a replacement: a pure function of the count.
func jobBackoff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := jobBackoffBase
	for range failures - 1 {
		if d >= jobBackoffMax {
			break
		}
		d *= 2
	}
	return min(d, jobBackoffMax)
}

// jobCondition returns j's condition typ when it is True.
func jobCondition(j *api.Job, typ string) *api.JobCondition {
	for i := range j.Status.Conditions {
		if c := &j.Status.Conditions[i]; c.Type == typ && c.Status == api.ConditionTrue {
			return c
		}
	}
	return nil
}

// jobFinishedAt returns when j became Complete or Failed.
func jobFinishedAt(j *api.Job) (time.Time, bool) {
	for _, typ := range []string{api.JobComplete, api.JobFailed} {
		if c := jobCondition(j, typ); c != nil {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// setJobCondition sets cond on conds, keeping the transition time when
// the status did not change.
func setJobCondition(conds []api.JobCondition, cond api.JobCondition, now time.Time) []api.JobCondition {
	out := slices.Clone(conds)
	for i := range out {
		if out[i].Type != cond.Type {
			continue
		}
		if out[i].Status == cond.Status {
			cond.LastTransitionTime = out[i].LastTransitionTime
		} else {
			cond.LastTransitionTime = api.NewTime(now)
		}
		cond.LastProbeTime = api.NewTime(now)
		out[i] = cond
		return out
	}
	cond.LastProbeTime, cond.LastTransitionTime = api.NewTime(now), api.NewTime(now)
	return append(out, cond)
}

// podIndex returns an Indexed Job pod's completion index, -1 if none.
func podIndex(p *api.Pod) int {
	n, err := strconv.Atoi(p.Annotations[api.AnnotationJobCompletionIdx])
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// jobPods is a Job's pods sorted into what its decisions need.
type jobPods struct {
	active            []*api.Pod
	ready             int
	terminating       int
	succeeded, failed int
	restarts          int // container restarts of OnFailure pods
	succeededIdx      map[int]bool
	activeIdx         map[int]bool
	lastFailure       time.Time
}

func sortJobPods(pods []*api.Pod) jobPods {
	jp := jobPods{succeededIdx: map[int]bool{}, activeIdx: map[int]bool{}}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			jp.restarts += int(cs.RestartCount)
		}
		switch {
		case p.Status.Phase == api.PodSucceeded:
			jp.succeeded++
			if i := podIndex(p); i >= 0 {
				jp.succeededIdx[i] = true
			}
		case p.Status.Phase == api.PodFailed:
			jp.failed++
			t := p.CreationTimestamp.Time
			for _, cs := range p.Status.ContainerStatuses {
				if tr := cs.State.Terminated; tr != nil && tr.FinishedAt.After(t) {
					t = tr.FinishedAt.Time
				}
			}
			if t.After(jp.lastFailure) {
				jp.lastFailure = t
			}
		case p.DeletionTimestamp != nil:
			jp.terminating++
		default:
			jp.active = append(jp.active, p)
			if r, _ := podReady(p); r {
				jp.ready++
			}
			if i := podIndex(p); i >= 0 {
				jp.activeIdx[i] = true
			}
		}
	}
	return jp
}

func (c *JobController) sync(ctx context.Context, key string) (time.Duration, error) {
	obj := c.in.Jobs.Get(key)
	if obj == nil {
		return 0, nil
	}
	j := obj.(*api.Job)
	if j.DeletionTimestamp != nil {
		return 0, nil
	}
	now := c.cfg.Clock.Now()
	if at, done := jobFinishedAt(j); done {
		return c.finished(ctx, j, at, now)
	}
	jp := sortJobPods(ownedPods(c.in, j.UID))
	st := j.Status
	var errs []error
	var wait time.Duration
	suspended := j.Spec.Suspend != nil && *j.Spec.Suspend
	indexed := j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == api.IndexedCompletion
	succeeded := jp.succeeded
	if indexed {
		succeeded = len(jp.succeededIdx)
	}
	failures := jp.failed
	if j.Spec.Template.Spec.RestartPolicy == api.RestartPolicyOnFailure {
		failures += jp.restarts
	}
	backoffLimit := int(api.DefaultJobBackoffLimit)
	if j.Spec.BackoffLimit != nil {
		backoffLimit = int(*j.Spec.BackoffLimit)
	}
	var deadline time.Time
	if d := j.Spec.ActiveDeadlineSeconds; d != nil && st.StartTime != nil {
		deadline = st.StartTime.Add(time.Duration(*d) * time.Second)
	}
	complete := false
	switch {
	case j.Spec.Completions != nil:
		complete = succeeded >= int(*j.Spec.Completions)
	default: // a work queue: done when one succeeded and none still runs
		complete = succeeded > 0 && len(jp.active) == 0
	}

	switch {
	case suspended:
		errs = append(errs, c.deletePods(ctx, j, jp.active, now))
		jp.active = nil
		st.StartTime = nil
		st.Conditions = setJobCondition(st.Conditions, api.JobCondition{Type: api.JobSuspended, Status: api.ConditionTrue, Reason: reasonJobSuspended, Message: "Job suspended"}, now)
	case complete:
		errs = append(errs, c.deletePods(ctx, j, jp.active, now))
		jp.active = nil
		st.CompletionTime = api.NewTimePtr(now)
		st.Conditions = setJobCondition(st.Conditions, api.JobCondition{Type: api.JobComplete, Status: api.ConditionTrue}, now)
		eventf(ctx, c.rec, j, api.EventTypeNormal, reasonCompleted, "Job completed")
	case failures > backoffLimit:
		errs = append(errs, c.fail(ctx, j, &st, jp.active, reasonBackoffLimitExceeded, "Job has reached the specified backoff limit", now))
		jp.active = nil
	case !deadline.IsZero() && !now.Before(deadline):
		errs = append(errs, c.fail(ctx, j, &st, jp.active, reasonJobDeadlineExceeded, "Job was active longer than specified deadline", now))
		jp.active = nil
	default:
		if jobCondition(j, api.JobSuspended) != nil {
			st.Conditions = setJobCondition(st.Conditions, api.JobCondition{Type: api.JobSuspended, Status: api.ConditionFalse, Reason: reasonJobResumed, Message: "Job resumed"}, now)
		}
		if st.StartTime == nil {
			st.StartTime = api.NewTimePtr(now)
			if d := j.Spec.ActiveDeadlineSeconds; d != nil {
				deadline = now.Add(time.Duration(*d) * time.Second)
			}
		}
		var err error
		jp.active, wait, err = c.manage(ctx, j, jp, succeeded, indexed, failures, now)
		errs = append(errs, err)
		if !deadline.IsZero() && (wait == 0 || deadline.Sub(now) < wait) {
			wait = deadline.Sub(now)
		}
	}
	st.Active = int32(len(jp.active))
	st.Succeeded = int32(succeeded)
	st.Failed = int32(jp.failed)
	ready := int32(jp.ready)
	st.Ready = &ready
	term := int32(jp.terminating)
	st.Terminating = &term
	if indexed {
		st.CompletedIndexes = formatIndexes(jp.succeededIdx)
	}
	if !reflect.DeepEqual(st, j.Status) {
		cp := *j
		cp.Status = st
		if err := c.cfg.Store.Update(ctx, &cp); err != nil && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, fmt.Errorf("update status of job %s: %w", key, err))
		} else if err == nil {
			c.in.Jobs.Assume(&cp)
			if _, done := jobFinishedAt(&cp); done {
				// Look again for the TTL.
				wait = time.Millisecond
			}
		}
	}
	return wait, errors.Join(errs...)
}

// fail marks st Failed with reason and deletes the active pods.
func (c *JobController) fail(ctx context.Context, j *api.Job, st *api.JobStatus, active []*api.Pod, reason, msg string, now time.Time) error {
	st.Conditions = setJobCondition(st.Conditions, api.JobCondition{Type: api.JobFailed, Status: api.ConditionTrue, Reason: reason, Message: msg}, now)
	eventf(ctx, c.rec, j, api.EventTypeWarning, reason, "%s", msg)
	return c.deletePods(ctx, j, active, now)
}

func (c *JobController) deletePods(ctx context.Context, j *api.Job, pods []*api.Pod, now time.Time) error {
	var errs []error
	for _, p := range pods {
		if err := c.pods.delete(ctx, p, now); err != nil {
			errs = append(errs, fmt.Errorf("delete pod %s of job %s/%s: %w", p.Name, j.Namespace, j.Name, err))
			continue
		}
		eventf(ctx, c.rec, j, api.EventTypeNormal, reasonSuccessfulDelete, "Deleted pod: %s", p.Name)
	}
	return errors.Join(errs...)
}

// manage creates the pods j lacks (after the back-off of its failures)
// and deletes the ones beyond its parallelism. It returns the active pods
// afterwards and when to look again.
func (c *JobController) manage(ctx context.Context, j *api.Job, jp jobPods, succeeded int, indexed bool, failures int, now time.Time) ([]*api.Pod, time.Duration, error) {
	parallelism := 1
	if j.Spec.Parallelism != nil {
		parallelism = int(*j.Spec.Parallelism)
	}
	want := parallelism
	if comp := j.Spec.Completions; comp != nil {
		want = min(parallelism, int(*comp)-succeeded)
	} else if succeeded > 0 {
		want = 0 // a work queue stops starting pods once one succeeded
	}
	active := jp.active
	if len(active) > want {
		victims := pickForDeletion(active, len(active)-want)
		err := c.deletePods(ctx, j, victims, now)
		active = slices.DeleteFunc(slices.Clone(active), func(p *api.Pod) bool { return slices.Contains(victims, p) })
		return active, 0, err
	}
	if len(active) == want {
		return active, 0, nil
	}
	if failures > 0 {
		if left := jp.lastFailure.Add(jobBackoff(failures)).Sub(now); left > 0 {
			return active, left, nil
		}
	}
	var indexes []int
	if indexed {
		for i := 0; i < int(*j.Spec.Completions) && len(indexes) < want-len(active); i++ {
			if !jp.succeededIdx[i] && !jp.activeIdx[i] {
				indexes = append(indexes, i)
			}
		}
	} else {
		for range want - len(active) {
			indexes = append(indexes, -1)
		}
	}
	o := owner{kind: "Job", apiVersion: "batch/v1", meta: &j.ObjectMeta}
	made, err := c.pods.createAll(ctx, len(indexes), func(k int) (*api.Pod, error) {
		return newJobPod(j, o, indexes[k], now)
	})
	for _, p := range made {
		if p != nil {
			active = append(active, p)
			eventf(ctx, c.rec, j, api.EventTypeNormal, reasonSuccessfulCreate, "Created pod: %s", p.Name)
		}
	}
	if err != nil {
		eventf(ctx, c.rec, j, api.EventTypeWarning, reasonFailedCreate, "Error creating: %v", err)
		return active, 0, fmt.Errorf("create pods of job %s/%s: %w", j.Namespace, j.Name, err)
	}
	return active, 0, nil
}

// newJobPod makes a pod of j; an Indexed Job's pod (index >= 0) carries
// its index as annotation, label, hostname and JOB_COMPLETION_INDEX.
func newJobPod(j *api.Job, o owner, index int, now time.Time) (*api.Pod, error) {
	if index < 0 {
		return newPod(&j.Spec.Template, o, podPrefix(j.Name), nil, nil, "", now)
	}
	idx := strconv.Itoa(index)
	t := copyTemplate(&j.Spec.Template)
	env := api.EnvVar{Name: envJobCompletionIndex, ValueFrom: &api.EnvVarSource{FieldRef: &api.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: "metadata.annotations['" + api.AnnotationJobCompletionIdx + "']"}}}
	for i := range t.Spec.Containers {
		t.Spec.Containers[i].Env = append(t.Spec.Containers[i].Env, env)
	}
	for i := range t.Spec.InitContainers {
		t.Spec.InitContainers[i].Env = append(t.Spec.InitContainers[i].Env, env)
	}
	if t.Spec.Hostname == "" {
		t.Spec.Hostname = j.Name + "-" + idx
	}
	return newPod(&t, o, podPrefix(j.Name+"-"+idx),
		map[string]string{api.LabelJobCompletionIndex: idx},
		map[string]string{api.AnnotationJobCompletionIdx: idx}, "", now)
}

// finished handles a Complete or Failed Job: after ttlSecondsAfterFinished
// it is deleted (its pods follow through the garbage collector).
func (c *JobController) finished(ctx context.Context, j *api.Job, at, now time.Time) (time.Duration, error) {
	ttl := j.Spec.TTLSecondsAfterFinished
	if ttl == nil {
		return 0, nil
	}
	if left := at.Add(time.Duration(*ttl) * time.Second).Sub(now); left > 0 {
		return left, nil
	}
	out, err := c.cfg.Store.Delete(ctx, "jobs", j.Namespace, j.Name, j.ResourceVersion)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return 0, nil
		}
		return 0, fmt.Errorf("delete finished job %s/%s: %w", j.Namespace, j.Name, err)
	}
	c.in.Jobs.AssumeDeleted(j, revisionOf(out))
	return 0, nil
}

// formatIndexes renders a set of indexes as Kubernetes' completedIndexes:
// sorted, runs collapsed ("0-2,4,6-7").
func formatIndexes(set map[int]bool) string {
	idx := make([]int, 0, len(set))
	for i := range set {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var out []byte
	for i := 0; i < len(idx); {
		k := i
		for k+1 < len(idx) && idx[k+1] == idx[k]+1 {
			k++
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendInt(out, int64(idx[i]), 10)
		if k > i {
			out = append(out, '-')
			out = strconv.AppendInt(out, int64(idx[k]), 10)
		}
		i = k + 1
	}
	return string(out)
}
