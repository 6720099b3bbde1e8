package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func job(name string, completions, parallelism int32) *api.Job {
	t := podTemplate(name, "busybox")
	t.Spec.RestartPolicy = api.RestartPolicyNever
	return &api.Job{
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       api.JobSpec{Completions: &completions, Parallelism: &parallelism, Template: t},
	}
}

// finish sets the phase of the active pods of owner uid (at most n of
// them, by name) to phase, as their agent would report it.
func (h *harness) finish(uid string, phase api.PodPhase, n int) []*api.Pod {
	h.t.Helper()
	var done []*api.Pod
	for _, p := range h.pods() {
		if len(done) == n {
			break
		}
		if ref := controllerRef(&p.ObjectMeta); ref == nil || ref.UID != uid || !active(p) {
			continue
		}
		p.Status.Phase = phase
		code := int32(0)
		if phase == api.PodFailed {
			code = 1
		}
		p.Status.ContainerStatuses = []api.ContainerStatus{{Name: "c", State: api.ContainerState{Terminated: &api.ContainerStateTerminated{ExitCode: code, FinishedAt: api.NewTime(h.clk.Now())}}}}
		if err := h.store.Update(h.ctx, p); err != nil {
			h.t.Fatal(err)
		}
		done = append(done, p)
	}
	return done
}

func (h *harness) job(name string) *api.Job {
	return h.get("jobs", "default", name).(*api.Job)
}

func TestJobCompletesWithParallelism(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	j := h.create(job("batch", 5, 2)).(*api.Job)
	if sel := j.Spec.Selector; sel == nil || sel.MatchLabels[api.LabelJobControllerUID] != j.UID || j.Spec.Template.Labels[api.LabelJobName] != "batch" {
		t.Fatalf("defaulted selector %v template labels %v; want the job's uid and name", sel, j.Spec.Template.Labels)
	}
	h.settle()
	for done := 0; done < 5; {
		if s := h.statsOf(j.UID); s.active != min(2, 5-done) {
			t.Fatalf("after %d succeeded: %d active pods; want %d", done, s.active, min(2, 5-done))
		}
		done += len(h.finish(j.UID, api.PodSucceeded, 1))
		h.settle()
	}
	got := h.job("batch")
	if c := jobCondition(got, api.JobComplete); c == nil || got.Status.Succeeded != 5 || got.Status.Active != 0 || got.Status.CompletionTime == nil {
		t.Fatalf("status = %+v; want Complete with 5 succeeded", got.Status)
	}
	if h.rec.has(reasonCompleted) == 0 {
		t.Errorf("no %s event", reasonCompleted)
	}
}

// TestJobBackoffToFailed: each failed pod is replaced after a doubling
// delay (10 s, 20 s, …) on the clock; one failure more than backoffLimit
// fails the Job.
func TestJobBackoffToFailed(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	j := job("flaky", 1, 1)
	limit := int32(2)
	j.Spec.BackoffLimit = &limit
	j = h.create(j).(*api.Job)
	h.settle()
	for i, delay := range []time.Duration{10 * time.Second, 20 * time.Second} {
		h.finish(j.UID, api.PodFailed, 1)
		h.settle()
		if s := h.statsOf(j.UID); s.active != 0 {
			t.Fatalf("failure %d: a replacement at once; want one after %s", i+1, delay)
		}
		h.advance(delay - time.Second)
		if s := h.statsOf(j.UID); s.active != 0 {
			t.Fatalf("failure %d: a replacement before %s", i+1, delay)
		}
		h.advance(time.Second)
		if s := h.statsOf(j.UID); s.active != 1 {
			t.Fatalf("failure %d: %d active after %s; want 1", i+1, s.active, delay)
		}
	}
	h.finish(j.UID, api.PodFailed, 1)
	h.settle()
	got := h.job("flaky")
	c := jobCondition(got, api.JobFailed)
	if c == nil || c.Reason != reasonBackoffLimitExceeded || got.Status.Failed != 3 || got.Status.Active != 0 {
		t.Fatalf("status = %+v; want Failed (BackoffLimitExceeded) after 3 failures", got.Status)
	}
	if s := h.statsOf(j.UID); s.active != 0 {
		t.Errorf("%d active pods after the job failed; want 0", s.active)
	}
}

func TestJobIndexed(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	j := job("idx", 3, 3)
	mode := api.IndexedCompletion
	j.Spec.CompletionMode = &mode
	j = h.create(j).(*api.Job)
	h.settle()
	seen := map[string]bool{}
	for _, p := range h.pods() {
		idx := p.Annotations[api.AnnotationJobCompletionIdx]
		seen[idx] = true
		env := p.Spec.Containers[0].Env
		if p.Labels[api.LabelJobCompletionIndex] != idx || !strings.HasPrefix(p.Name, "idx-"+idx+"-") || p.Spec.Hostname != "idx-"+idx ||
			len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom == nil || !strings.Contains(env[0].ValueFrom.FieldRef.FieldPath, api.AnnotationJobCompletionIdx) {
			t.Errorf("pod %s: index %q, labels %v, hostname %q, env %+v; want the index everywhere", p.Name, idx, p.Labels, p.Spec.Hostname, env)
		}
	}
	if len(seen) != 3 || !seen["0"] || !seen["1"] || !seen["2"] {
		t.Fatalf("indexes = %v; want 0, 1, 2", seen)
	}
	// Index 1 fails and is retried with the same index; 0 and 2 succeed.
	for _, p := range h.pods() {
		phase := api.PodSucceeded
		if p.Annotations[api.AnnotationJobCompletionIdx] == "1" {
			phase = api.PodFailed
		}
		p.Status.Phase = phase
		if err := h.store.Update(h.ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	h.settle()
	if got := h.job("idx"); got.Status.CompletedIndexes != "0,2" || got.Status.Succeeded != 2 {
		t.Fatalf("status = %+v; want completedIndexes 0,2", got.Status)
	}
	h.advance(10 * time.Second)
	var retry *api.Pod
	for _, p := range h.pods() {
		if active(p) {
			retry = p
		}
	}
	if retry == nil || retry.Annotations[api.AnnotationJobCompletionIdx] != "1" {
		t.Fatalf("retry pod = %v; want one for index 1", retry)
	}
	h.finish(j.UID, api.PodSucceeded, 1)
	h.settle()
	if got := h.job("idx"); jobCondition(got, api.JobComplete) == nil || got.Status.CompletedIndexes != "0-2" {
		t.Fatalf("status = %+v; want Complete with indexes 0-2", got.Status)
	}
}

func TestJobDeadlineSuspendAndTTL(t *testing.T) {
	h := newHarness(t)
	h.addNodes(nodes3...)
	j := job("slow", 1, 1)
	dl := int64(60)
	ttl := int32(30)
	j.Spec.ActiveDeadlineSeconds = &dl
	j.Spec.TTLSecondsAfterFinished = &ttl
	j = h.create(j).(*api.Job)
	h.settle()
	h.cycle(nodes3...)
	// Suspend: pods go, the condition says so.
	h.edit("jobs", "default", "slow", func(o api.Object) { yes := true; o.(*api.Job).Spec.Suspend = &yes })
	h.settle()
	if got := h.job("slow"); jobCondition(got, api.JobSuspended) == nil || got.Status.StartTime != nil {
		t.Fatalf("status = %+v; want Suspended without a start time", got.Status)
	}
	if s := h.statsOf(j.UID); s.active != 0 {
		t.Fatalf("%d active pods while suspended; want 0", s.active)
	}
	h.run(nodes3...) // agents confirm the deletion
	h.edit("jobs", "default", "slow", func(o api.Object) { no := false; o.(*api.Job).Spec.Suspend = &no })
	h.settle()
	if s := h.statsOf(j.UID); s.active != 1 {
		t.Fatalf("%d active pods after resume; want 1", s.active)
	}
	// The deadline counts from the resume.
	h.advance(59 * time.Second)
	if got := h.job("slow"); jobCondition(got, api.JobFailed) != nil {
		t.Fatal("failed before its deadline")
	}
	h.advance(time.Second)
	got := h.job("slow")
	if c := jobCondition(got, api.JobFailed); c == nil || c.Reason != reasonJobDeadlineExceeded {
		t.Fatalf("status = %+v; want Failed (DeadlineExceeded)", got.Status)
	}
	h.advance(29 * time.Second)
	if _, err := h.store.Get(h.ctx, "jobs", "default", "slow"); err != nil {
		t.Fatalf("job gone before its TTL: %v", err)
	}
	h.advance(time.Second)
	if _, err := h.store.Get(h.ctx, "jobs", "default", "slow"); err == nil {
		t.Fatal("job still there after its TTL")
	}
}

func TestFormatIndexes(t *testing.T) {
	tests := []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{0}, "0"}, {[]int{0, 1}, "0-1"}, {[]int{3, 0, 1, 2, 5, 7, 8}, "0-3,5,7-8"}}
	for _, tt := range tests {
		set := map[int]bool{}
		for _, i := range tt.in {
			set[i] = true
		}
		if got := formatIndexes(set); got != tt.want {
			t.Errorf("formatIndexes(%v) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestJobBackoffDoubling(t *testing.T) {
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 320 * time.Second, 6 * time.Minute, 6 * time.Minute}
	for n, w := range want {
		if got := jobBackoff(n); got != w {
			t.Errorf("jobBackoff(%d) = %s; want %s", n, got, w)
		}
	}
	if got := jobBackoff(1 << 30); got != jobBackoffMax {
		t.Errorf("jobBackoff(huge) = %s; want the cap", got)
	}
}
