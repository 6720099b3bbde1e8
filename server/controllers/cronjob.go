package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/cron"
	"github.com/skiffhq/skiff/internal/uid"
	"github.com/skiffhq/skiff/storage"
)

// CronJob event reasons, as Kubernetes writes them.
const (
	reasonTooManyMissed     = "TooManyMissedTimes"
	reasonMissSchedule      = "MissSchedule"
	reasonJobAlreadyActive  = "JobAlreadyActive"
	reasonSuccessfulDeleteJ = "SuccessfulDelete"
	reasonSawCompletedJob   = "SawCompletedJob"
	reasonUnparseable       = "UnparseableSchedule"
	reasonUnknownTimeZone   = "UnknownTimeZone"
)

// tooManyMissed is the count of missed start times beyond which a
// warning is recorded (Kubernetes' limit).
const tooManyMissed = 100

// CronJobController creates a CronJob's Jobs at its scheduled times, in
// its time zone, on the Clock; it applies the concurrency policy and the
// starting deadline, keeps status.active and the last schedule and
// success times, and deletes finished Jobs beyond the history limits.
type CronJobController struct {
	cfg   Config
	in    *Informers
	rec   EventRecorder
	queue *Queue
}

func newCronJobController(cfg Config, in *Informers) *CronJobController {
	c := &CronJobController{cfg: cfg, in: in, rec: cfg.recorder("cronjob-controller"), queue: NewQueue(cfg.Clock)}
	watchOwnerAndPods(in.CronJobs, in.Jobs, "CronJob", c.queue)
	return c
}

func (c *CronJobController) worker() *worker {
	return &worker{name: "cronjob", queue: c.queue, sync: c.sync}
}

// missedTimes returns the most recent time s fired in (earliest, now]
// and how many times it fired there, counted as Kubernetes counts them:
// the first two firings give an interval, and the count is how many such
// intervals fit (exact for regular schedules, an estimate otherwise).
func missedTimes(s cron.Schedule, earliest, now time.Time) (time.Time, int) {
	t1 := s.Next(earliest)
	if t1.IsZero() || t1.After(now) {
		return time.Time{}, 0
	}
	t2 := s.Next(t1)
	if t2.IsZero() || t2.After(now) {
		return t1, 1
	}
	interval := t2.Sub(t1).Round(time.Second)
	if interval < time.Second {
		interval = time.Second
	}
	n := int(now.Sub(t1)/interval) + 1
	// Find the real most recent firing: start a little before the
	// estimate (never before t1) and walk forward.
	from := t1
	if n > 2 {
		if est := t1.Add(time.Duration(n-2) * interval); est.After(from) && est.Before(now) {
			from = est.Add(-time.Second)
		}
	}
	recent := time.Time{}
	for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
		recent = t
	}
	if recent.IsZero() { // the estimate overshot an irregular schedule
		for t := t1; !t.IsZero() && !t.After(now); t = s.Next(t) {
			recent = t
		}
	}
	return recent, n
}

// jobNameFor is the name of the Job scheduled at t: the CronJob's name
// and t in minutes since the epoch, as Kubernetes names them.
func jobNameFor(cj *api.CronJob, t time.Time) string {
	return cj.Name + "-" + strconv.FormatInt(t.Unix()/60, 10)
}

func (c *CronJobController) cronJobs(cj *api.CronJob) []*api.Job {
	objs := c.in.Jobs.ByIndex(indexByOwner, cj.UID)
	out := make([]*api.Job, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*api.Job))
	}
	return out
}

func (c *CronJobController) sync(ctx context.Context, key string) (time.Duration, error) {
	obj := c.in.CronJobs.Get(key)
	if obj == nil {
		return 0, nil
	}
	cj := obj.(*api.CronJob)
	if cj.DeletionTimestamp != nil {
		return 0, nil
	}
	now := c.cfg.Clock.Now()
	jobs := c.cronJobs(cj)
	st := cj.Status
	var errs []error
	st.Active = nil
	for _, j := range jobs {
		at, done := jobFinishedAt(j)
		if !done {
			st.Active = append(st.Active, api.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: j.Namespace, Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion})
			continue
		}
		if jobCondition(j, api.JobComplete) != nil && (st.LastSuccessfulTime == nil || at.After(st.LastSuccessfulTime.Time)) {
			st.LastSuccessfulTime = api.NewTimePtr(at)
		}
	}
	slices.SortFunc(st.Active, func(a, b api.ObjectReference) int { return compareStrings(a.Name, b.Name) })
	errs = append(errs, c.trimHistory(ctx, cj, jobs))

	wait, err := c.schedule(ctx, cj, &st, now)
	errs = append(errs, err)

	if !reflect.DeepEqual(st, cj.Status) {
		cp := *cj
		cp.Status = st
		if err := c.cfg.Store.Update(ctx, &cp); err != nil && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, fmt.Errorf("update status of cronjob %s: %w", key, err))
		} else if err == nil {
			c.in.CronJobs.Assume(&cp)
		}
	}
	return wait, errors.Join(errs...)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// schedule creates the Job of the most recent missed start time, if it
// is due, and returns how long until the next one.
func (c *CronJobController) schedule(ctx context.Context, cj *api.CronJob, st *api.CronJobStatus, now time.Time) (time.Duration, error) {
	sched, err := cron.Parse(cj.Spec.Schedule)
	if err != nil {
		eventf(ctx, c.rec, cj, api.EventTypeWarning, reasonUnparseable, "unparseable schedule %q: %v", cj.Spec.Schedule, err)
		return 0, nil
	}
	loc, err := cron.LoadLocation(cj.Spec.TimeZone)
	if err != nil {
		eventf(ctx, c.rec, cj, api.EventTypeWarning, reasonUnknownTimeZone, "invalid timeZone: %v", err)
		return 0, nil
	}
	now = now.In(loc)
	next := sched.Next(now)
	wait := time.Duration(0)
	if !next.IsZero() {
		wait = next.Sub(now)
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return 0, nil
	}
	earliest := cj.CreationTimestamp.Time
	if st.LastScheduleTime != nil {
		earliest = st.LastScheduleTime.Time
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if e := now.Add(-time.Duration(*d) * time.Second); e.After(earliest) {
			earliest = e
		}
	}
	recent, missed := missedTimes(sched, earliest.In(loc), now)
	if recent.IsZero() {
		return wait, nil
	}
	if missed > tooManyMissed {
		eventf(ctx, c.rec, cj, api.EventTypeWarning, reasonTooManyMissed,
			"too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && recent.Add(time.Duration(*d)*time.Second).Before(now) {
		eventf(ctx, c.rec, cj, api.EventTypeWarning, reasonMissSchedule, "Missed scheduled time to start a job: %s", recent.Format(time.RFC1123Z))
		return wait, nil
	}
	name := jobNameFor(cj, recent)
	if c.in.Jobs.Get(cj.Namespace+"/"+name) != nil {
		st.LastScheduleTime = api.NewTimePtr(recent)
		return wait, nil
	}
	switch cj.Spec.ConcurrencyPolicy {
	case api.ForbidConcurrent:
		if len(st.Active) > 0 {
			eventf(ctx, c.rec, cj, api.EventTypeNormal, reasonJobAlreadyActive, "Not starting job because prior execution is running and concurrency policy is Forbid")
			return wait, nil
		}
	case api.ReplaceConcurrent:
		for _, ref := range st.Active {
			if err := c.deleteJob(ctx, cj, ref.Namespace, ref.Name); err != nil {
				return 0, err
			}
		}
		st.Active = nil
	}
	j, err := newCronJobJob(cj, name, recent, c.cfg.Clock.Now())
	if err != nil {
		return 0, err
	}
	if err := c.cfg.Store.Create(ctx, j); err != nil {
		if errors.Is(err, storage.ErrExists) {
			st.LastScheduleTime = api.NewTimePtr(recent)
			return wait, nil
		}
		eventf(ctx, c.rec, cj, api.EventTypeWarning, reasonFailedCreate, "Error creating job: %v", err)
		return 0, fmt.Errorf("create job %s/%s: %w", j.Namespace, j.Name, err)
	}
	c.in.Jobs.Assume(j)
	eventf(ctx, c.rec, cj, api.EventTypeNormal, reasonSuccessfulCreate, "Created job %s", j.Name)
	st.Active = append(st.Active, api.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: j.Namespace, Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion})
	st.LastScheduleTime = api.NewTimePtr(recent)
	return wait, nil
}

// newCronJobJob builds the Job cj runs at scheduled, prepared as the API
// server prepares a create, defaulted (its selector generated) and
// validated.
func newCronJobJob(cj *api.CronJob, name string, scheduled, now time.Time) (*api.Job, error) {
	t := cj.Spec.JobTemplate
	tc := copyTemplate(&t.Spec.Template)
	spec := t.Spec
	spec.Template = tc
	ann := maps.Clone(t.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	ann[api.AnnotationCronJobScheduled] = scheduled.Format(time.RFC3339)
	j := &api.Job{
		ObjectMeta: api.ObjectMeta{
			Name: name, Namespace: cj.Namespace, UID: uid.New(), Generation: 1,
			CreationTimestamp: api.NewTime(now),
			Labels:            maps.Clone(t.Labels),
			Annotations:       ann,
			OwnerReferences:   []api.OwnerReference{owner{kind: "CronJob", apiVersion: "batch/v1", meta: &cj.ObjectMeta}.ref()},
		},
		Spec: spec,
	}
	api.SetTypeMeta(j)
	api.SetDefaults(j)
	if errs := api.Validate(j); len(errs) > 0 {
		return nil, fmt.Errorf("job for cronjob %s/%s is invalid: %w", cj.Namespace, cj.Name, errs)
	}
	return j, nil
}

func (c *CronJobController) deleteJob(ctx context.Context, cj *api.CronJob, ns, name string) error {
	out, err := c.cfg.Store.Delete(ctx, "jobs", ns, name, "")
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("delete job %s/%s of cronjob %s: %w", ns, name, cj.Name, err)
	}
	if o := c.in.Jobs.Get(ns + "/" + name); o != nil {
		c.in.Jobs.AssumeDeleted(o, revisionOf(out))
	}
	eventf(ctx, c.rec, cj, api.EventTypeNormal, reasonSuccessfulDeleteJ, "Deleted job %s", name)
	return nil
}

// trimHistory deletes cj's oldest finished Jobs beyond its successful and
// failed history limits.
func (c *CronJobController) trimHistory(ctx context.Context, cj *api.CronJob, jobs []*api.Job) error {
	var ok, failed []*api.Job
	for _, j := range jobs {
		switch {
		case jobCondition(j, api.JobComplete) != nil:
			ok = append(ok, j)
		case jobCondition(j, api.JobFailed) != nil:
			failed = append(failed, j)
		}
	}
	var errs []error
	for _, set := range []struct {
		jobs  []*api.Job
		limit *int32
	}{{ok, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if set.limit == nil || len(set.jobs) <= int(*set.limit) {
			continue
		}
		slices.SortFunc(set.jobs, func(a, b *api.Job) int {
			if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
				return c
			}
			return compareStrings(a.Name, b.Name)
		})
		for _, j := range set.jobs[:len(set.jobs)-int(*set.limit)] {
			errs = append(errs, c.deleteJob(ctx, cj, j.Namespace, j.Name))
		}
	}
	return errors.Join(errs...)
}
