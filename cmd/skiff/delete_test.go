package main

import (
	"context"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
)

func TestDeleteGolden(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	h.create(`apiVersion: v1
kind: Pod
metadata: {name: loose}
spec:
  containers: [{name: app, image: "busybox:1.36"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: conf-a}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: conf-b}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
`)
	h.golden("delete-pod", h.run("delete", "pod", "loose"))
	h.golden("delete-many", h.run("delete", "cm", "conf-a", "conf-b", "gone"))
	h.golden("delete-slash-form", h.run("delete", "deploy/web", "--wait=false"))
	h.golden("delete-ignore-not-found", h.run("delete", "pods", "nope", "--ignore-not-found"))
	h.golden("delete-no-name", h.run("delete", "pods"))
	h.golden("delete-nothing", h.run("delete"))

	cms, _ := api.LookupResource("configmaps")
	objs, _, err := h.admin.List(context.Background(), cms, "default", client.ListOptions{})
	if err != nil || len(objs) != 0 {
		t.Errorf("after delete, configmaps = %d, %v; want none", len(objs), err)
	}
}

// A bound pod lingers until its agent stops it: delete waits for that,
// and ends as soon as the pod is gone (here forced by a second delete).
func TestDeleteWaitsUntilGone(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	h.create(`apiVersion: v1
kind: Pod
metadata: {name: bound}
spec:
  nodeName: node-1
  containers: [{name: app, image: "busybox:1.36"}]
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, h.cliEnv(&out, &errb, ""), []string{"delete", "pod", "bound"}) }()
	waitFor(t, "the deleted line", func() bool { return strings.Contains(out.String(), `pod "bound" deleted`) })
	select {
	case code := <-done:
		t.Fatalf("delete returned %d while the pod still exists (stderr %q)", code, errb.String())
	default:
	}
	if r := h.run("delete", "pod", "bound", "--grace-period=0", "--wait=false"); r.code != 0 {
		t.Fatalf("forced delete = %d, %q", r.code, r.stderr)
	}
	if code := <-done; code != 0 {
		t.Errorf("waiting delete exited %d (stderr %q); want 0 once the pod is gone", code, errb.String())
	}
}

func TestDeleteTimesOut(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	h.create(`apiVersion: v1
kind: Pod
metadata: {name: stuck}
spec:
  nodeName: node-1
  containers: [{name: app, image: "busybox:1.36"}]
`)
	r := h.run("delete", "pod", "stuck", "--timeout", "200ms")
	if r.code != 1 || !strings.Contains(r.stderr, `timed out after 200ms waiting for the deletion of pod "stuck"`) {
		t.Errorf("delete with a short timeout = %d, stderr %q; want 1 and a timeout message", r.code, r.stderr)
	}
}
