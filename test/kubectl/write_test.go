package kubectl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateFromFile creates objects from YAML and JSON on stdin and
// checks what kubectl prints, including the AlreadyExists error.
func TestCreateFromFile(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	if got := c.stdinOK(t, podYAML(ns, "web", ""), "create", "-f", "-"); got != "pod/web created\n" {
		t.Errorf("create -f pod = %q; want %q", got, "pod/web created\n")
	}
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"` + ns + `"},"data":{"k":"v"}}`
	if got := c.stdinOK(t, cm, "create", "-f", "-"); got != "configmap/settings created\n" {
		t.Errorf("create -f configmap JSON = %q; want configmap/settings created", got)
	}
	stderr := c.fails(t, podYAML(ns, "web", ""), "create", "-f", "-")
	if want := `Error from server (AlreadyExists): error when creating "STDIN": pods "web" already exists`; !strings.Contains(stderr, want) {
		t.Errorf("second create stderr = %q; want %q", stderr, want)
	}
}

// TestCreateGenerators uses kubectl create's own generators, which send
// their bodies as protobuf since kubectl 1.32 (typed clients).
func TestCreateGenerators(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "configmap", "gen-cm", "--from-literal=color=blue"}, "configmap/gen-cm created\n"},
		{[]string{"create", "secret", "generic", "gen-secret", "--from-literal=password=hunter2"}, "secret/gen-secret created\n"},
		{[]string{"create", "deployment", "gen-deploy", "--image=nginx:1.27", "--replicas=2", "--port=80"}, "deployment.apps/gen-deploy created\n"},
	} {
		if got := c.ok(t, append(tc.args, "-n", ns)...); got != tc.want {
			t.Errorf("kubectl %s = %q; want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	if got := c.ok(t, "get", "cm", "gen-cm", "-n", ns, "-o", "jsonpath={.data.color}"); got != "blue" {
		t.Errorf("gen-cm data.color = %q; want blue", got)
	}
	if got := c.ok(t, "get", "secret", "gen-secret", "-n", ns, "-o", "jsonpath={.data.password}"); got != "aHVudGVyMg==" {
		t.Errorf("gen-secret data.password = %q; want base64 of hunter2", got)
	}
	if got := c.ok(t, "get", "deploy", "gen-deploy", "-n", ns, "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}"); got != "2 nginx:1.27 80" {
		t.Errorf("gen-deploy = %q; want 2 nginx:1.27 80", got)
	}
	name := ns + "-gen"
	if got := c.ok(t, "create", "namespace", name); got != "namespace/"+name+" created\n" {
		t.Errorf("create namespace = %q; want namespace/%s created", got, name)
	}
}

// TestApplyCreateThenPatch applies a manifest twice: the first apply
// creates, an unchanged second one is a no-op, and a changed one patches
// with a strategic merge patch that keeps the server's defaults. It
// needs strategic merge patch and the patch metadata in OpenAPI.
func TestApplyCreateThenPatch(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	m := deploymentYAML(ns, "web", 2, "nginx:1.27")
	if got := c.stdinOK(t, m, "apply", "-f", "-"); got != "deployment.apps/web created\n" {
		t.Errorf("first apply = %q; want created", got)
	}
	if got := c.stdinOK(t, m, "apply", "-f", "-"); got != "deployment.apps/web unchanged\n" {
		t.Errorf("second apply of the same manifest = %q; want unchanged", got)
	}
	changed := strings.Replace(strings.Replace(m, "replicas: 2", "replicas: 5", 1), "nginx:1.27", "nginx:1.28", 1)
	if got := c.stdinOK(t, changed, "apply", "-f", "-"); got != "deployment.apps/web configured\n" {
		t.Errorf("apply of a changed manifest = %q; want configured", got)
	}
	got := c.ok(t, "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].imagePullPolicy}")
	if got != "5 nginx:1.28 IfNotPresent" {
		t.Errorf("after apply: replicas, image, pull policy = %q; want 5 nginx:1.28 IfNotPresent", got)
	}
	// A container dropped from the manifest is dropped from the object.
	two := strings.Replace(m, "      containers:\n", "      containers:\n      - name: side\n        image: busybox:1.36\n", 1)
	c.stdinOK(t, two, "apply", "-f", "-")
	if got := c.ok(t, "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[*].name}"); got != "side web" {
		t.Errorf("containers after adding side = %q; want side web", got)
	}
	c.stdinOK(t, m, "apply", "-f", "-")
	if got := c.ok(t, "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[*].name}"); got != "web" {
		t.Errorf("containers after removing side = %q; want web", got)
	}
}

// TestPatchTypes patches with each patch type kubectl offers.
func TestPatchTypes(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.stdinOK(t, deploymentYAML(ns, "web", 1, "nginx:1.27"), "create", "-f", "-")
	for _, tc := range []struct {
		name, typ, patch, path, want string
	}{
		{"merge", "merge", `{"spec":{"replicas":2}}`, "{.spec.replicas}", "2"},
		{"strategic", "strategic", `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`, "{.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}", "nginx:1.28 80"},
		{"json", "json", `[{"op":"replace","path":"/spec/replicas","value":3}]`, "{.spec.replicas}", "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.ok(t, "patch", "deployment", "web", "-n", ns, "--type", tc.typ, "-p", tc.patch); got != "deployment.apps/web patched\n" {
				t.Errorf("patch --type %s = %q; want patched", tc.typ, got)
			}
			if got := c.ok(t, "get", "deploy", "web", "-n", ns, "-o", "jsonpath="+tc.path); got != tc.want {
				t.Errorf("after patch --type %s: %s = %q; want %q", tc.typ, tc.path, got, tc.want)
			}
		})
	}
}

// TestScaleLabelAnnotate uses the scale subresource and label/annotate,
// which send JSON merge patches.
func TestScaleLabelAnnotate(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.stdinOK(t, deploymentYAML(ns, "web", 1, "nginx:1.27"), "create", "-f", "-")
	if got := c.ok(t, "scale", "deployment/web", "-n", ns, "--replicas=4"); got != "deployment.apps/web scaled\n" {
		t.Errorf("scale = %q; want scaled", got)
	}
	if got := c.ok(t, "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.spec.replicas}"); got != "4" {
		t.Errorf("replicas after scale = %q; want 4", got)
	}
	stderr := c.fails(t, "", "scale", "deployment/web", "-n", ns, "--replicas=5", "--current-replicas=2")
	if !strings.Contains(stderr, "Expected replicas to be 2, was 4") {
		t.Errorf("scale with a wrong --current-replicas: stderr %q; want the precondition error", stderr)
	}
	if got := c.ok(t, "label", "deploy", "web", "-n", ns, "tier=frontend"); got != "deployment.apps/web labeled\n" {
		t.Errorf("label = %q; want labeled", got)
	}
	if got := c.ok(t, "annotate", "deploy", "web", "-n", ns, "owner=team-a"); got != "deployment.apps/web annotated\n" {
		t.Errorf("annotate = %q; want annotated", got)
	}
	if got := c.ok(t, "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.metadata.labels.tier} {.metadata.annotations.owner}"); got != "frontend team-a" {
		t.Errorf("labels and annotations = %q; want frontend team-a", got)
	}
	stderr = c.fails(t, "", "label", "deploy", "web", "-n", ns, "tier=backend")
	if !strings.Contains(stderr, "'tier' already has a value (frontend), and --overwrite is false") {
		t.Errorf("label without --overwrite: stderr %q; want kubectl's refusal", stderr)
	}
	c.ok(t, "label", "deploy", "web", "-n", ns, "tier-")
	if got := c.ok(t, "get", "deploy", "web", "-n", ns, "-o", "jsonpath={.metadata.labels}"); strings.Contains(got, "tier") {
		t.Errorf("labels after removing tier = %q; want no tier", got)
	}
}

// TestEdit edits a config map with a scripted KUBE_EDITOR; kubectl edit
// sends a strategic merge patch.
func TestEdit(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.stdinOK(t, configMapYAML(ns, "settings"), "create", "-f", "-")
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/greeting: hello/greeting: goodbye/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := c.run(t, "", []string{"KUBE_EDITOR=" + editor}, "edit", "configmap", "settings", "-n", ns)
	if r.err != nil || r.stdout != "configmap/settings edited\n" {
		t.Fatalf("edit: %v, stdout %q, stderr %q; want configmap/settings edited", r.err, r.stdout, r.stderr)
	}
	if got := c.ok(t, "get", "cm", "settings", "-n", ns, "-o", "jsonpath={.data.greeting}"); got != "goodbye" {
		t.Errorf("greeting after edit = %q; want goodbye", got)
	}
}
