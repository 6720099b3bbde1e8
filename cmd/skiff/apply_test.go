package main

import (
	"context"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
)

const applyManifests = `# a web app
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-conf
data:
  nginx.conf: worker_processes 1;
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
---
apiVersion: v1
kind: Pod
metadata:
  name: probe
  namespace: edge
spec:
  containers:
  - name: probe
    image: busybox:1.36
`

func TestApplyGolden(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	h.create("apiVersion: v1\nkind: Namespace\nmetadata: {name: edge}\n")
	web := h.writeFile("web.yaml", applyManifests)

	h.golden("apply-create", h.run("apply", "-f", web))
	h.golden("apply-unchanged", h.run("apply", "-f", web))
	h.writeFile("web.yaml", strings.Replace(applyManifests, "worker_processes 1;", "worker_processes 2;", 1))
	h.golden("apply-configured", h.run("apply", "-f", web))

	// The configured change reached the server.
	res, _ := api.LookupResource("configmaps")
	obj, err := h.admin.Get(context.Background(), res, "default", "web-conf")
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*api.ConfigMap).Data["nginx.conf"]; got != "worker_processes 2;" {
		t.Errorf("after apply, web-conf nginx.conf = %q; want the new value", got)
	}

	bad := h.writeFile("bad.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: fine}
---
apiVersion: v1
kind: Pod
metadata: {name: typo}
spec:
  containerz: []
---
apiVersion: v1
kind: Widget
metadata: {name: svc}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: broken
`)
	h.golden("apply-bad-documents", h.run("apply", "-f", bad))
	if _, err := h.admin.Get(context.Background(), res, "default", "fine"); !api.IsNotFound(err) {
		t.Errorf("a manifest with a bad document was partly applied: get fine = %v; want NotFound", err)
	}

	h.golden("apply-stdin-namespace", h.runStdin(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-stdin"},"data":{"k":"v"}}`,
		"apply", "-n", "edge", "-f", "-"))
	h.golden("apply-namespace-mismatch", h.run("apply", "-f", web, "-n", "default"))
	h.golden("apply-missing-namespace", h.runStdin("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lost, namespace: nowhere}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: noimage}\nspec:\n  containers: [{name: app}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\n", "apply", "-f", "-"))

	h.writeFile("dir/b.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dir-b}\n")
	h.writeFile("dir/a.json", `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dir-a1"}},{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dir-a2"}}]}`)
	h.writeFile("dir/notes.txt", "not a manifest")
	h.golden("apply-directory", h.run("apply", "-f", h.dir+"/dir"))

	h.golden("apply-no-file", h.run("apply"))
	h.golden("apply-missing-file", h.run("apply", "-f", h.dir+"/absent.yaml"))
	h.golden("apply-empty", h.runStdin("# nothing here\n---\n", "apply", "-f", "-"))
}

// TestApplyAfterScheduling re-applies a bare pod after the scheduler
// bound it: unchanged, not `changed: spec.nodeName`; a new image then
// updates it and keeps the binding.
func TestApplyAfterScheduling(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: bare}\nspec:\n  containers: [{name: app, image: busybox:1.36}]\n"
	file := h.writeFile("bare.yaml", pod)
	if r := h.run("apply", "-f", file); !strings.Contains(r.stdout, "pod/bare created") {
		t.Fatalf("first apply: %+v", r)
	}
	res, _ := api.LookupResource("pods")
	if _, err := h.admin.Patch(context.Background(), res, "default", "bare", "application/merge-patch+json", []byte(`{"spec":{"nodeName":"edge-1"}}`)); err != nil {
		t.Fatal(err)
	}
	if r := h.run("apply", "-f", file); !strings.Contains(r.stdout, "pod/bare unchanged") {
		t.Fatalf("re-apply after scheduling: stdout %q stderr %q; want unchanged", r.stdout, r.stderr)
	}
	h.writeFile("bare.yaml", strings.Replace(pod, "busybox:1.36", "busybox:1.37", 1))
	if r := h.run("apply", "-f", file); !strings.Contains(r.stdout, "pod/bare configured") {
		t.Fatalf("apply of a new image: stdout %q stderr %q; want configured", r.stdout, r.stderr)
	}
	obj, err := h.admin.Get(context.Background(), res, "default", "bare")
	if err != nil {
		t.Fatal(err)
	}
	if p := obj.(*api.Pod); p.Spec.NodeName != "edge-1" || p.Spec.Containers[0].Image != "busybox:1.37" || p.Annotations["kubectl.kubernetes.io/last-applied-configuration"] == "" {
		t.Errorf("pod after apply: node %q image %q annotations %v", p.Spec.NodeName, p.Spec.Containers[0].Image, p.Annotations)
	}
}
