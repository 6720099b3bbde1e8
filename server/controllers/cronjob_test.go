package controllers

import (
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/cron"
	"github.com/skiffhq/skiff/storage"
)

func cronJob(name, schedule string, tz *string) *api.CronJob {
	t := podTemplate(name, "busybox")
	t.Spec.RestartPolicy = api.RestartPolicyOnFailure
	return &api.CronJob{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       api.CronJobSpec{Schedule: schedule, TimeZone: tz, JobTemplate: api.JobTemplateSpec{Spec: api.JobSpec{Template: t}}},
	}
}

// scheduledTimes returns the scheduled-timestamp annotations of the
// stored Jobs, sorted.
func (h *harness) scheduledTimes() []string {
	objs, _, err := h.store.List(h.ctx, "jobs", storage.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.GetObjectMeta().Annotations[api.AnnotationCronJobScheduled])
	}
	slices.Sort(out)
	return out
}

// walk advances the clock to end in steps, settling after each.
func (h *harness) walk(end time.Time, step time.Duration) {
	for h.clk.Now().Before(end) {
		h.advance(min(step, end.Sub(h.clk.Now())))
	}
}

// TestCronJobAcrossDST runs CronJobs in New York time on a fake clock
// through both 2026 changes: 02:30 does not exist on 8 March (no run that
// day), 01:30 happens twice on 1 November (two runs), as Kubernetes'
// controller behaves.
func TestCronJobAcrossDST(t *testing.T) {
	tz := "America/New_York"
	ny, err := cron.LoadLocation(&tz)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, schedule string
		from, to       time.Time
		want           []string
	}{
		{"spring", "30 2 * * *", time.Date(2026, 3, 6, 12, 0, 0, 0, ny), time.Date(2026, 3, 9, 12, 0, 0, 0, ny),
			[]string{"2026-03-07T02:30:00-05:00", "2026-03-09T02:30:00-04:00"}},
		{"fall", "30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), time.Date(2026, 11, 2, 12, 0, 0, 0, ny),
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.clk.Set(tt.from)
			cj := cronJob("nightly", tt.schedule, &tz)
			hist := int32(10)
			cj.Spec.SuccessfulJobsHistoryLimit = &hist
			h.create(cj)
			h.settle()
			h.walk(tt.to, 10*time.Minute)
			if got := h.scheduledTimes(); !slices.Equal(got, tt.want) {
				t.Fatalf("jobs scheduled at %v; want %v", got, tt.want)
			}
			got := h.get("cronjobs", "default", "nightly").(*api.CronJob)
			if len(got.Status.Active) != len(tt.want) || got.Status.LastScheduleTime == nil {
				t.Errorf("status = %+v; want %d active and a last schedule time", got.Status, len(tt.want))
			}
		})
	}
}

// TestCronJobConcurrencyAndHistory: Forbid skips a run while one is
// active, Replace deletes the active one, finished Jobs beyond the
// history limit go.
func TestCronJobConcurrencyAndHistory(t *testing.T) {
	start := time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC)
	for _, policy := range []string{api.ForbidConcurrent, api.ReplaceConcurrent} {
		t.Run(policy, func(t *testing.T) {
			h := newHarness(t)
			h.clk.Set(start)
			tz := "UTC"
			cj := cronJob("every", "* * * * *", &tz)
			cj.Spec.ConcurrencyPolicy = policy
			h.create(cj)
			h.settle()
			h.advance(time.Minute)
			h.advance(time.Minute)
			jobs := h.scheduledTimes()
			switch policy {
			case api.ForbidConcurrent:
				if len(jobs) != 1 || h.rec.has(reasonJobAlreadyActive) == 0 {
					t.Fatalf("Forbid: jobs %v, %d JobAlreadyActive events; want 1 job and the event", jobs, h.rec.has(reasonJobAlreadyActive))
				}
			case api.ReplaceConcurrent:
				if len(jobs) != 1 || jobs[0] != "2026-05-01T10:02:00Z" {
					t.Fatalf("Replace: jobs %v; want only the newest", jobs)
				}
			}
		})
	}

	h := newHarness(t)
	h.clk.Set(start)
	tz := "UTC"
	cj := h.create(cronJob("hist", "* * * * *", &tz)).(*api.CronJob)
	_ = cj
	for range 5 {
		h.advance(time.Minute)
		for _, o := range h.jobsList() {
			if _, done := jobFinishedAt(o); !done {
				h.finish(o.UID, api.PodSucceeded, 1)
			}
		}
		h.settle()
	}
	if got := h.scheduledTimes(); len(got) != 3 {
		t.Fatalf("jobs after 5 successful runs = %v; want the 3 newest", got)
	}
	if got := h.get("cronjobs", "default", "hist").(*api.CronJob); got.Status.LastSuccessfulTime == nil {
		t.Errorf("status = %+v; want a last successful time", got.Status)
	}
}

func (h *harness) jobsList() []*api.Job {
	objs, _, err := h.store.List(h.ctx, "jobs", storage.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	out := make([]*api.Job, len(objs))
	for i, o := range objs {
		out[i] = o.(*api.Job)
	}
	return out
}

// TestCronJobMissedRuns: after a long outage the CronJob starts only the
// most recent missed run, warns when more than 100 were missed, and with
// startingDeadlineSeconds skips a run that is too late.
func TestCronJobMissedRuns(t *testing.T) {
	start := time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC)
	h := newHarness(t)
	h.clk.Set(start)
	tz := "UTC"
	h.create(cronJob("minutely", "* * * * *", &tz))
	h.m.CronJobs.queue.Forget("default/minutely")
	// The controller is down for 3 hours (180 runs missed).
	h.clk.Set(start.Add(3 * time.Hour))
	h.settle()
	if got := h.scheduledTimes(); len(got) != 1 || got[0] != "2026-05-01T13:00:00Z" {
		t.Fatalf("jobs after the outage = %v; want only 13:00", got)
	}
	if h.rec.has(reasonTooManyMissed) == 0 {
		t.Error("no TooManyMissedTimes warning after 180 missed runs")
	}

	s, _ := cron.Parse("*/5 * * * *")
	for _, tt := range []struct {
		earliest, now string
		recent        string
		n             int
	}{
		{"10:00", "10:04", "", 0},
		{"10:00", "10:05", "10:05", 1},
		{"10:00", "10:12", "10:10", 2},
		{"10:00", "18:21", "18:20", 100},
	} {
		at := func(s string) time.Time {
			v, _ := time.Parse("2006-01-02 15:04", "2026-05-01 "+s)
			return v
		}
		recent, n := missedTimes(s, at(tt.earliest), at(tt.now))
		want := time.Time{}
		if tt.recent != "" {
			want = at(tt.recent)
		}
		if !recent.Equal(want) || n != tt.n {
			t.Errorf("missedTimes(*/5, %s, %s) = %s, %d; want %s, %d", tt.earliest, tt.now, recent, n, want, tt.n)
		}
	}

	h2 := newHarness(t)
	h2.clk.Set(start)
	cj := cronJob("late", "0 * * * *", &tz)
	dl := int64(60)
	cj.Spec.StartingDeadlineSeconds = &dl
	h2.create(cj)
	h2.settle()
	h2.clk.Set(time.Date(2026, 5, 1, 11, 5, 0, 0, time.UTC)) // 11:00 is 5 minutes late
	h2.settle()
	if got := h2.scheduledTimes(); len(got) != 0 {
		t.Fatalf("jobs = %v; want none (past the starting deadline)", got)
	}
}
