package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

func withControllers(c *Config) { c.DisableControllers = false }

const webDeployment = `{"apiVersion":"apps/v1","kind":"Deployment",
	"metadata":{"name":"web","annotations":{"kubernetes.io/change-cause":"v1"}},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
	"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1"}]}}}}`

// images counts the active pods of Deployment web by image and reports
// whether exactly want of them run image and none other.
func (f *fleet) runs(image string, want int) bool {
	c := f.count("Deployment", "web")
	return c.active == want && c.images[image] == want && c.terminating == 0
}

// TestRolloutUndoThroughServer does what kubectl rollout undo
// --to-revision=1 does, against a real server with simulated nodes: read
// the ReplicaSets, find revision 1, and JSON-patch its template and
// annotations onto the Deployment. The first ReplicaSet is reused and
// becomes revision 3.
func TestRolloutUndoThroughServer(t *testing.T) {
	h := startHarnessWith(t, "", nil, withControllers)
	all := []string{"edge-1", "edge-2"}
	f := newFleet(t, h, all...)
	h.mustDo("POST", "/apis/apps/v1/namespaces/default/deployments", f.admin, webDeployment, 201)
	f.until("nginx:1 running", all, func() bool { return f.runs("nginx:1", 2) })
	first := f.replicaSets("web")
	if len(first) != 1 || first[0].Annotations["deployment.kubernetes.io/revision"] != "1" || first[0].Annotations["kubernetes.io/change-cause"] != "v1" {
		t.Fatalf("replica sets = %+v; want one at revision 1 with change cause v1", first)
	}
	h.mustDo("PATCH", "/apis/apps/v1/namespaces/default/deployments/web", f.admin,
		`{"metadata":{"annotations":{"kubernetes.io/change-cause":"v2"}},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}`, 200)
	f.until("nginx:2 rolled out", all, func() bool { return f.runs("nginx:2", 2) })

	var rev1 api.ReplicaSet
	for _, rs := range f.replicaSets("web") {
		if rs.Annotations["deployment.kubernetes.io/revision"] == "1" {
			rev1 = rs
		}
	}
	if rev1.Name == "" {
		t.Fatal("no replica set at revision 1 after the rollout")
	}
	tmpl := rev1.Spec.Template
	delete(tmpl.Labels, "pod-template-hash")
	ann := f.deployment("web").Annotations
	ann["kubernetes.io/change-cause"] = rev1.Annotations["kubernetes.io/change-cause"]
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/spec/template", "value": tmpl},
		{"op": "replace", "path": "/metadata/annotations", "value": ann},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.mustDoType("PATCH", "/apis/apps/v1/namespaces/default/deployments/web", f.admin, "application/json-patch+json", string(patch), 200)
	f.until("nginx:1 back", all, func() bool { return f.runs("nginx:1", 2) })
	rss := f.replicaSets("web")
	revs := map[string]string{}
	for _, rs := range rss {
		revs[rs.Name] = rs.Annotations["deployment.kubernetes.io/revision"]
	}
	if len(rss) != 2 || revs[rev1.Name] != "3" {
		t.Errorf("replica sets (revisions) = %v; want 2, the first reused as revision 3", revs)
	}
	if d := f.deployment("web"); d.Annotations["deployment.kubernetes.io/revision"] != "3" || d.Annotations["kubernetes.io/change-cause"] != "v1" {
		t.Errorf("deployment annotations = %v; want revision 3, change cause v1", d.Annotations)
	}
	if cells := f.tableRow("/apis/apps/v1/namespaces/default/replicasets/" + rev1.Name); fmt.Sprint(cells[:4]) != "["+rev1.Name+" 2 2 2]" {
		t.Errorf("replica set table row = %v; want %s 2 2 2", cells, rev1.Name)
	}
}

// TestReplicaSetsSurviveRestart: after a server restart the Deployment's
// ReplicaSet and pods are the same objects; nothing is recreated.
func TestReplicaSetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(time.Now())
	h := startHarnessWith(t, dir, clk, withControllers)
	all := []string{"edge-1", "edge-2"}
	f := newFleet(t, h, all...)
	h.mustDo("POST", "/apis/apps/v1/namespaces/default/deployments", f.admin, webDeployment, 201)
	f.until("nginx:1 running", all, func() bool { return f.runs("nginx:1", 2) })
	uids := func(f *fleet) []string {
		var out []string
		for _, p := range f.pods() {
			out = append(out, p.UID)
		}
		for _, rs := range f.replicaSets("web") {
			out = append(out, rs.UID)
		}
		slices.Sort(out)
		return out
	}
	before := uids(f)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h2 := startHarnessWith(t, dir, clk, withControllers)
	f2 := &fleet{h: h2, admin: h2.adminToken(), nodes: all}
	f2.beat(all...)
	f2.until("the deployment ready after the restart", all, func() bool {
		d := f2.deployment("web")
		return d.Status.ReadyReplicas == 2 && f2.runs("nginx:1", 2)
	})
	if after := uids(f2); !slices.Equal(before, after) {
		t.Errorf("pod and replica set UIDs after restart = %v; want the same %v", after, before)
	}
}

func (f *fleet) job(name string) api.Job {
	var j api.Job
	json.Unmarshal(f.h.mustDo("GET", "/apis/batch/v1/namespaces/default/jobs/"+name, f.admin, "", 200), &j)
	return j
}

// setPhase reports the pods of Job job as finished in phase, as their
// agent would.
func (f *fleet) setPhase(job string, phase api.PodPhase) int {
	n := 0
	for _, p := range f.pods() {
		if p.Labels["job-name"] != job || p.Status.Phase == api.PodFailed || p.Status.Phase == api.PodSucceeded || p.DeletionTimestamp != nil {
			continue
		}
		f.h.mustDo("PATCH", "/api/v1/namespaces/default/pods/"+p.Name+"/status", f.admin, fmt.Sprintf(`{"status":{"phase":%q}}`, phase), 200)
		n++
	}
	return n
}

func hasJobCondition(j api.Job, typ, reason string) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == api.ConditionTrue && (reason == "" || c.Reason == reason) {
			return true
		}
	}
	return false
}

// TestJobsThroughServer: a Job whose pods keep failing is retried after
// the back-off on the clock and ends Failed; an Indexed Job completes
// with every index.
func TestJobsThroughServer(t *testing.T) {
	h := startHarnessWith(t, "", nil, withControllers)
	all := []string{"edge-1", "edge-2"}
	f := newFleet(t, h, all...)
	h.mustDo("POST", "/apis/batch/v1/namespaces/default/jobs", f.admin, `{"apiVersion":"batch/v1","kind":"Job",
		"metadata":{"name":"flaky"},"spec":{"backoffLimit":1,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`, 201)
	active := func(name string, n int) func() bool {
		return func() bool { j := f.job(name); return j.Status.Active == int32(n) }
	}
	f.until("the first pod", all, active("flaky", 1))
	if f.setPhase("flaky", api.PodFailed) != 1 {
		t.Fatal("no pod to fail")
	}
	f.until("the failure counted", all, func() bool { j := f.job("flaky"); return j.Status.Failed == 1 && j.Status.Active == 0 })
	h.clk.Advance(10 * time.Second) // the back-off
	f.until("the retry", all, func() bool {
		h.clk.Advance(100 * time.Millisecond) // see TestCronJobThroughServerAcrossDST
		return active("flaky", 1)()
	})
	f.setPhase("flaky", api.PodFailed)
	f.until("the job to fail", all, func() bool { return hasJobCondition(f.job("flaky"), "Failed", "BackoffLimitExceeded") })
	if cells := f.tableRow("/apis/batch/v1/namespaces/default/jobs/flaky"); fmt.Sprint(cells[:3]) != "[flaky Failed 0/1]" {
		t.Errorf("job table row = %v; want flaky Failed 0/1", cells)
	}

	h.mustDo("POST", "/apis/batch/v1/namespaces/default/jobs", f.admin, `{"apiVersion":"batch/v1","kind":"Job",
		"metadata":{"name":"shards"},"spec":{"completions":3,"parallelism":3,"completionMode":"Indexed",
		"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`, 201)
	f.until("three shards", all, active("shards", 3))
	idx := map[string]bool{}
	for _, p := range f.pods() {
		if p.Labels["job-name"] == "shards" {
			idx[p.Annotations["batch.kubernetes.io/job-completion-index"]] = true
		}
	}
	if len(idx) != 3 || !idx["0"] || !idx["1"] || !idx["2"] {
		t.Fatalf("completion indexes = %v; want 0, 1, 2", idx)
	}
	f.setPhase("shards", api.PodSucceeded)
	f.until("the indexed job to complete", all, func() bool {
		j := f.job("shards")
		return hasJobCondition(j, "Complete", "") && j.Status.CompletedIndexes == "0-2" && j.Status.Succeeded == 3
	})
}

// TestCronJobThroughServerAcrossDST runs a CronJob in New York time in a
// real server on a fake clock through the November 2026 change: 01:30
// happens twice and runs twice.
func TestCronJobThroughServerAcrossDST(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2026, 10, 31, 12, 0, 0, 0, ny))
	h := startHarnessWith(t, "", clk, withControllers)
	f := &fleet{h: h, admin: h.adminToken()}
	h.mustDo("POST", "/apis/batch/v1/namespaces/default/cronjobs", f.admin, `{"apiVersion":"batch/v1","kind":"CronJob",
		"metadata":{"name":"nightly"},"spec":{"schedule":"30 1 * * *","timeZone":"America/New_York","successfulJobsHistoryLimit":10,
		"jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox"}]}}}}}}`, 201)
	scheduled := func() []string {
		var l struct{ Items []api.Job }
		json.Unmarshal(h.mustDo("GET", "/apis/batch/v1/namespaces/default/jobs", f.admin, "", 200), &l)
		var out []string
		for _, j := range l.Items {
			out = append(out, j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
		}
		slices.Sort(out)
		return out
	}
	want := []string{"2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-02T01:30:00-05:00"}
	for i, at := range want {
		tm, _ := time.Parse(time.RFC3339, at)
		for clk.Now().Before(tm.Add(time.Minute)) {
			clk.Advance(10 * time.Minute)
		}
		f.until(fmt.Sprintf("job %d (%s)", i+1, at), nil, func() bool {
			// A worker may arm its timer just after an Advance (the fake
			// clock then fires it that much later): nudge the clock.
			clk.Advance(time.Second)
			return len(scheduled()) == i+1
		})
	}
	if got := scheduled(); !slices.Equal(got, want) {
		t.Errorf("jobs scheduled at %v; want %v", got, want)
	}
	f.until("three active jobs in the status", nil, func() bool {
		var cj api.CronJob
		json.Unmarshal(h.mustDo("GET", "/apis/batch/v1/namespaces/default/cronjobs/nightly", f.admin, "", 200), &cj)
		return len(cj.Status.Active) == 3
	})
	if cells := f.tableRow("/apis/batch/v1/namespaces/default/cronjobs/nightly"); fmt.Sprint(cells[:5]) != "[nightly 30 1 * * * America/New_York False 3]" {
		t.Errorf("cronjob table row = %v; want nightly, schedule, zone, False, 3 active", cells)
	}
}
