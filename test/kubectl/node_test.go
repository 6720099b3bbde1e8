package kubectl

import (
	"strings"
	"testing"
)

// TestCordonDrain cordons, uncordons and drains a node. cordon sends a
// strategic merge patch; drain evicts through pods/{name}/eviction and
// waits for each pod to be gone.
func TestCordonDrain(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	node := ns + "-node"
	c.stdinOK(t, nodeYAML(node), "create", "-f", "-")

	if got := c.ok(t, "cordon", node); got != "node/"+node+" cordoned\n" {
		t.Errorf("cordon = %q; want cordoned", got)
	}
	if got := c.ok(t, "get", "node", node, "-o", "jsonpath={.spec.unschedulable}"); got != "true" {
		t.Errorf("spec.unschedulable after cordon = %q; want true", got)
	}
	if got := c.ok(t, "uncordon", node); got != "node/"+node+" uncordoned\n" {
		t.Errorf("uncordon = %q; want uncordoned", got)
	}
	if got := c.ok(t, "get", "node", node, "-o", "jsonpath={.spec.unschedulable}"); got != "" {
		t.Errorf("spec.unschedulable after uncordon = %q; want unset", got)
	}

	// Two pods bound to the node; no agent runs, so the grace period is
	// zero and eviction removes them at once.
	c.stdinOK(t, podYAML(ns, "bound-a", node)+"---\n"+podYAML(ns, "bound-b", node), "create", "-f", "-")
	r := c.run(t, "", nil, "drain", node, "--force", "--grace-period=0", "--timeout=20s")
	if r.err != nil {
		t.Fatalf("drain: %v\nstdout: %s\nstderr: %s", r.err, r.stdout, r.stderr)
	}
	for _, want := range []string{"node/" + node + " cordoned", "pod/bound-a evicted", "pod/bound-b evicted", "node/" + node + " drained"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("drain stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if got := c.ok(t, "get", "pods", "-n", ns, "-o", "name"); got != "" {
		t.Errorf("pods after drain = %q; want none", got)
	}
}

// TestEviction posts an Eviction for a pod directly, as kubectl drain does
// for each pod, and checks the errors of a bad one.
func TestEviction(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.stdinOK(t, podYAML(ns, "victim", ""), "create", "-f", "-")
	eviction := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"victim","namespace":"` + ns + `"}}`
	r := c.run(t, eviction, nil, "create", "--raw", "/api/v1/namespaces/"+ns+"/pods/victim/eviction", "-f", "-")
	if r.err != nil || !strings.Contains(r.stdout, `"status":"Success"`) {
		t.Fatalf("POST eviction: %v, stdout %q, stderr %q; want a Success Status", r.err, r.stdout, r.stderr)
	}
	stderr := c.fails(t, "", "get", "pod", "victim", "-n", ns)
	if want := `Error from server (NotFound): pods "victim" not found`; !strings.Contains(stderr, want) {
		t.Errorf("get evicted pod: stderr %q; want %q", stderr, want)
	}
	stderr = c.fails(t, eviction, "create", "--raw", "/api/v1/namespaces/"+ns+"/pods/victim/eviction", "-f", "-")
	if want := `Error from server (NotFound): pods "victim" not found`; !strings.Contains(stderr, want) {
		t.Errorf("evict a missing pod: stderr %q; want %q", stderr, want)
	}
}
