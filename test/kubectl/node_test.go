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

// TestDrainRespectsDisruptionBudget: with a PodDisruptionBudget of
// minAvailable 1 over two ready pods, kubectl drain evicts one and keeps
// retrying the other (429) until its timeout.
func TestDrainRespectsDisruptionBudget(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	node := ns + "-node"
	c.stdinOK(t, nodeYAML(node), "create", "-f", "-")
	pods := strings.ReplaceAll(podYAML(ns, "db-a", node), "app: db-a", "app: db") + "---\n" +
		strings.ReplaceAll(podYAML(ns, "db-b", node), "app: db-b", "app: db")
	c.stdinOK(t, pods, "create", "-f", "-")
	for _, p := range []string{"db-a", "db-b"} {
		c.ok(t, "patch", "pod", p, "-n", ns, "--subresource=status", "--type=merge",
			"-p", `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`)
	}
	c.ok(t, "create", "poddisruptionbudget", "db", "--selector=app=db", "--min-available=1", "-n", ns)
	out := c.ok(t, "get", "pdb", "-n", ns)
	if h := header(out); h != "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE" {
		t.Errorf("get pdb header = %q", h)
	}
	if r := c.run(t, "", nil, "drain", node, "--force", "--grace-period=0", "--dry-run=server"); r.err != nil {
		t.Fatalf("drain --dry-run=server: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	if n := len(strings.Fields(c.ok(t, "get", "pods", "-n", ns, "-o", "name"))); n != 2 {
		t.Fatalf("%d pods after a dry-run drain; want 2", n)
	}
	c.ok(t, "uncordon", node)
	r := c.run(t, "", nil, "drain", node, "--force", "--grace-period=0", "--timeout=4s")
	if r.err == nil {
		t.Fatalf("drain succeeded; want it to time out on the budget\nstdout: %s", r.stdout)
	}
	if !strings.Contains(r.stderr, "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Errorf("drain stderr = %q; want the budget refusal", r.stderr)
	}
	if n := len(strings.Fields(c.ok(t, "get", "pods", "-n", ns, "-o", "name"))); n != 1 {
		t.Errorf("%d pods left after the drain; want 1 (the budget keeps one)", n)
	}
}
