package kubectl

import (
	"strings"
	"testing"
)

// TestDescribe describes a pod and a deployment.
func TestDescribe(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.stdinOK(t, podYAML(ns, "p", "")+"---\n"+deploymentYAML(ns, "web", 2, "nginx:1.27"), "create", "-f", "-")
	uid := c.ok(t, "get", "pod", "p", "-n", ns, "-o", "jsonpath={.metadata.uid}")
	c.stdinOK(t, eventYAML(ns, "p-scheduled", "p", uid), "create", "-f", "-")
	out := c.ok(t, "describe", "pod", "p", "-n", ns)
	for _, want := range []string{"Name:", "Namespace:    " + ns, "Status:       Pending", "Image:", "busybox:1.36", "QoS Class:", "BestEffort", "Scheduled", "assigned to a node"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe pod lacks %q:\n%s", want, out)
		}
	}
	out = c.ok(t, "describe", "deployment", "web", "-n", ns)
	for _, want := range []string{"Name:                   web", "Selector:               app=web", "Replicas:               2 desired", "nginx:1.27"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe deployment lacks %q:\n%s", want, out)
		}
	}
}

// TestExplain reads the OpenAPI v3 documents skiff generates from its Go
// types.
func TestExplain(t *testing.T) {
	t.Parallel()
	c := start(t)
	out := c.ok(t, "explain", "pods.spec.containers")
	for _, want := range []string{"KIND:       Pod", "VERSION:    v1", "FIELD: containers <[]Container>", "image\t<string>", "ports\t<[]ContainerPort>", "resources\t<ResourceRequirements>"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain pods.spec.containers lacks %q:\n%s", want, out)
		}
	}
	out = c.ok(t, "explain", "deployment.spec.strategy")
	for _, want := range []string{"GROUP:      apps", "KIND:       Deployment", "rollingUpdate\t<RollingUpdateDeployment>", "type\t<string>"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain deployment.spec.strategy lacks %q:\n%s", want, out)
		}
	}
	out = c.ok(t, "explain", "pods")
	if !strings.Contains(out, "DESCRIPTION:\n    Pod is") {
		t.Errorf("explain pods has no description from the Go doc comment:\n%s", out)
	}
	stderr := c.fails(t, "", "explain", "pods.spec.nope")
	if !strings.Contains(stderr, `field "nope" does not exist`) {
		t.Errorf("explain of a missing field: stderr %q; want field does not exist", stderr)
	}
}

// TestErrors checks that server errors print as Kubernetes' do.
func TestErrors(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"missing pod", "", []string{"get", "pod", "nope", "-n", ns}, `Error from server (NotFound): pods "nope" not found`},
		{"missing deployment", "", []string{"get", "deployment", "nope", "-n", ns}, `Error from server (NotFound): deployments.apps "nope" not found`},
		{"missing node", "", []string{"get", "node", "no-such-node"}, `Error from server (NotFound): nodes "no-such-node" not found`},
		{"delete missing", "", []string{"delete", "configmap", "nope", "-n", ns}, `Error from server (NotFound): configmaps "nope" not found`},
		{"missing namespace", "", []string{"get", "pod", "x", "-n", "no-such-namespace"}, `Error from server (NotFound): namespaces "no-such-namespace" not found`},
		{"unknown kind", "", []string{"get", "widgets"}, `error: the server doesn't have a resource type "widgets"`},
		{"invalid pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad","namespace":"` + ns + `"},"spec":{"containers":[{"name":"c"}]}}`,
			[]string{"create", "-f", "-"}, `The Pod "bad" is invalid: spec.containers[0].image: Required value`},
		{"unknown field", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"odd","namespace":"` + ns + `"},"dataa":{}}`,
			[]string{"create", "-f", "-"}, `unknown field "dataa"`},
		{"scale missing", "", []string{"scale", "deployment", "nope", "-n", ns, "--replicas=1"}, `deployments.apps "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr := c.fails(t, tc.stdin, tc.args...)
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("kubectl %s: stderr %q; want %q", strings.Join(tc.args, " "), stderr, tc.want)
			}
		})
	}
}
