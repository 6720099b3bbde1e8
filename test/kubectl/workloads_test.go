package kubectl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion: kubectl version reads /version in Kubernetes' shape and
// exits 0 (its skew check parses gitVersion).
func TestVersion(t *testing.T) {
	t.Parallel()
	c := start(t)
	out := c.ok(t, "version")
	if !strings.Contains(out, "Server Version: v1.32.0+skiff.") {
		t.Errorf("kubectl version = %q; want a server version v1.32.0+skiff.…", out)
	}
}

// TestCreateJobAndCronJob uses kubectl's generators (protobuf bodies) and
// reads the tables back with Kubernetes' columns.
func TestCreateJobAndCronJob(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	if got := c.ok(t, "create", "job", "once", "--image=busybox", "-n", ns, "--", "echo", "hi"); got != "job.batch/once created\n" {
		t.Errorf("create job = %q", got)
	}
	if got := c.ok(t, "create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "-n", ns, "--", "date"); got != "cronjob.batch/tick created\n" {
		t.Errorf("create cronjob = %q", got)
	}
	if got := c.ok(t, "get", "job", "once", "-n", ns, "-o", "jsonpath={.spec.template.spec.restartPolicy} {.spec.template.spec.containers[0].command} {.spec.backoffLimit}"); got != `Never ["echo","hi"] 6` {
		t.Errorf("job = %q; want Never, the command, backoffLimit 6", got)
	}
	out := c.ok(t, "get", "jobs", "-n", ns)
	if h := header(out); h != "NAME STATUS COMPLETIONS DURATION AGE" {
		t.Errorf("jobs header = %q", h)
	}
	if r := rows(out); len(r) != 1 || !strings.HasPrefix(r[0], "once Running 0/1") {
		t.Errorf("jobs rows = %q; want once Running 0/1", r)
	}
	out = c.ok(t, "get", "cronjobs", "-n", ns)
	if h := header(out); h != "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE" {
		t.Errorf("cronjobs header = %q", h)
	}
	if r := rows(out); len(r) != 1 || !strings.HasPrefix(r[0], "tick */5 * * * * <none> False 0 <none>") {
		t.Errorf("cronjobs rows = %q", r)
	}
	stderr := c.fails(t, "", "create", "cronjob", "bad", "--image=busybox", "--schedule=*/5 * *", "-n", ns)
	if !strings.Contains(stderr, "spec.schedule") {
		t.Errorf("bad schedule stderr = %q; want it to name spec.schedule", stderr)
	}
}

// TestDiffAndServerDryRun: kubectl diff and --dry-run=server show what
// would change and change nothing.
func TestDiffAndServerDryRun(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.stdinOK(t, deploymentYAML(ns, "web", 2, "nginx:1.27"), "apply", "-f", "-")
	r := c.run(t, deploymentYAML(ns, "web", 3, "nginx:1.27"), nil, "diff", "-f", "-")
	if r.err == nil || !strings.Contains(r.stdout, "-  replicas: 2") || !strings.Contains(r.stdout, "+  replicas: 3") {
		t.Errorf("kubectl diff = %v\n%s%s; want exit 1 and the replicas change", r.err, r.stdout, r.stderr)
	}
	if got := c.stdinOK(t, deploymentYAML(ns, "web", 5, "nginx:1.27"), "apply", "--dry-run=server", "-f", "-"); !strings.Contains(got, "(server dry run)") {
		t.Errorf("apply --dry-run=server = %q", got)
	}
	c.ok(t, "delete", "deployment", "web", "-n", ns, "--dry-run=server")
	if got := c.ok(t, "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "2" {
		t.Errorf("replicas after dry runs = %q; want 2", got)
	}
}

// TestApplyMultiDocumentValidated applies a file of several kinds with
// kubectl's default validation (strict, server-side field validation
// through OpenAPI v3) and then re-applies it changed.
func TestApplyMultiDocumentValidated(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	doc := func(image string) string {
		return `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ` + ns + `}
data: {color: blue}
---
` + deploymentYAML(ns, "web", 1, image) + `
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: ` + ns + `}
spec:
  schedule: "@daily"
  timeZone: Europe/Berlin
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: ` + image + `}]
`
	}
	file := filepath.Join(t.TempDir(), "all.yaml")
	if err := os.WriteFile(file, []byte(doc("nginx:1.27")), 0o600); err != nil {
		t.Fatal(err)
	}
	got := c.ok(t, "apply", "--validate=true", "-f", file)
	for _, want := range []string{"configmap/settings created", "deployment.apps/web created", "cronjob.batch/nightly created"} {
		if !strings.Contains(got, want) {
			t.Errorf("apply = %q; want %q", got, want)
		}
	}
	if err := os.WriteFile(file, []byte(doc("nginx:1.28")), 0o600); err != nil {
		t.Fatal(err)
	}
	got = c.ok(t, "apply", "-f", file)
	if !strings.Contains(got, "deployment.apps/web configured") || !strings.Contains(got, "cronjob.batch/nightly configured") {
		t.Errorf("second apply = %q; want web and nightly configured", got)
	}
	stderr := c.fails(t, strings.Replace(doc("nginx:1.28"), "schedule:", "schedul:", 1), "apply", "-f", "-")
	if !strings.Contains(stderr, `unknown field "spec.schedul"`) {
		t.Errorf("apply with a misspelt field: stderr %q; want the unknown field named", stderr)
	}
}

// TestRolloutHistoryAndUndo runs against the live cluster: every
// revision has a ReplicaSet, and rollout undo --to-revision=1 brings the
// first template back as revision 3.
func TestRolloutHistoryAndUndo(t *testing.T) {
	t.Parallel()
	c := startLive(t)
	ns := c.namespace(t)
	c.ok(t, "create", "deployment", "web", "--image=nginx:1", "-n", ns)
	c.ok(t, "annotate", "deployment", "web", "kubernetes.io/change-cause=first", "-n", ns)
	eventually(t, "one replica set", func() string {
		if n := len(rows(c.ok(t, "get", "rs", "-n", ns))); n != 1 {
			return "replica sets: " + c.ok(t, "get", "rs", "-n", ns)
		}
		return ""
	})
	c.ok(t, "set", "image", "deployment/web", "nginx=nginx:2", "-n", ns)
	c.ok(t, "annotate", "deployment", "web", "kubernetes.io/change-cause=second", "--overwrite", "-n", ns)
	eventually(t, "two revisions", func() string {
		out := c.ok(t, "rollout", "history", "deployment/web", "-n", ns)
		if !strings.Contains(out, "1         first") || !strings.Contains(out, "2         second") {
			return out
		}
		return ""
	})
	if out := c.ok(t, "get", "rs", "-n", ns); header(out) != "NAME DESIRED CURRENT READY AGE" {
		t.Errorf("get rs header = %q", header(out))
	}
	if got := c.ok(t, "rollout", "undo", "deployment/web", "--to-revision=1", "-n", ns); got != "deployment.apps/web rolled back\n" {
		t.Errorf("rollout undo = %q", got)
	}
	eventually(t, "revision 3 is the first template", func() string {
		out := c.ok(t, "rollout", "history", "deployment/web", "-n", ns)
		img := c.ok(t, "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[0].image} {.metadata.annotations.deployment\\.kubernetes\\.io/revision}")
		if !strings.Contains(out, "3         first") || strings.Contains(out, "1         first") || img != "nginx:1 3" {
			return out + " / " + img
		}
		return ""
	})
	if n := len(rows(c.ok(t, "get", "rs", "-n", ns))); n != 2 {
		t.Errorf("%d replica sets after undo; want 2 (the first reused)", n)
	}
	// kubectl scale works on a standalone ReplicaSet (scale subresource).
	c.stdinOK(t, replicaSetYAML(ns, "solo"), "apply", "-f", "-")
	if got := c.ok(t, "scale", "rs", "solo", "--replicas=3", "-n", ns); got != "replicaset.apps/solo scaled\n" {
		t.Errorf("scale rs = %q", got)
	}
	eventually(t, "solo at 3 replicas", func() string {
		if got := c.ok(t, "get", "rs", "solo", "-n", ns, "-o", "jsonpath={.spec.replicas} {.status.replicas}"); got != "3 3" {
			return got
		}
		return ""
	})
}
