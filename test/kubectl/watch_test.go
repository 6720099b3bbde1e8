package kubectl

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestGetWatch runs kubectl get -w, reads the initial list, then sees an
// object created and deleted while it watches, and stops it.
func TestGetWatch(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.stdinOK(t, configMapYAML(ns, "first"), "create", "-f", "-")

	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectl, "get", "configmaps", "-n", ns, "-w", "-o", "name")
	cmd.Env = []string{"HOME=" + c.home, "KUBECONFIG=" + c.kubeconfig}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	next := func(want string) {
		t.Helper()
		select {
		case got, ok := <-lines:
			if !ok || got != want {
				t.Fatalf("get -w printed %q (open %v); want %q", got, ok, want)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("get -w printed nothing in 15s; want %q", want)
		}
	}
	next("configmap/first")
	c.stdinOK(t, configMapYAML(ns, "second"), "create", "-f", "-")
	next("configmap/second")
	c.ok(t, "delete", "configmap", "second", "-n", ns)
	next("configmap/second")
}

// TestDeleteWaits deletes objects of several kinds; kubectl delete waits
// (watching with a metadata.name field selector) until each is gone. A
// pod bound to a node stays terminating until its agent confirms; here
// the test plays the agent.
func TestDeleteWaits(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	node := ns + "-node"
	c.stdinOK(t, strings.Join([]string{nodeYAML(node), podYAML(ns, "loose", ""), podYAML(ns, "bound", node),
		deploymentYAML(ns, "web", 1, "nginx:1.27"), configMapYAML(ns, "settings")}, "---\n"), "create", "-f", "-")

	for _, tc := range []struct{ args, want string }{
		{"pod loose", `pod "loose" deleted`},
		{"deployment web", `deployment.apps "web" deleted`},
		{"configmap settings", `configmap "settings" deleted`},
	} {
		if got := c.ok(t, append(strings.Fields("delete -n "+ns+" "+tc.args), "--timeout=15s")...); strings.TrimSpace(got) != tc.want {
			t.Errorf("delete %s = %q; want %q", tc.args, got, tc.want)
		}
	}

	done := c.background("delete", "pod", "bound", "-n", ns, "--timeout=20s")
	eventually(t, "bound pod marked for deletion", func() string {
		if ts := c.ok(t, "get", "pod", "bound", "-n", ns, "-o", "jsonpath={.metadata.deletionTimestamp}"); ts == "" {
			return "no deletionTimestamp yet"
		}
		return ""
	})
	select {
	case r := <-done:
		t.Fatalf("delete of a bound pod returned before the agent confirmed: %v %q %q", r.err, r.stdout, r.stderr)
	default:
	}
	c.ok(t, "delete", "pod", "bound", "-n", ns, "--grace-period=0", "--force") // the agent's confirmation
	r := <-done
	if r.err != nil || strings.TrimSpace(r.stdout) != `pod "bound" deleted` {
		t.Errorf("delete of a bound pod: %v, stdout %q, stderr %q; want deleted", r.err, r.stdout, r.stderr)
	}
}

// TestWaitAndRolloutStatus runs kubectl wait and rollout status while the
// test writes the status an agent and the deployment controller would.
func TestWaitAndRolloutStatus(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.stdinOK(t, podYAML(ns, "p", "")+"---\n"+deploymentYAML(ns, "web", 2, "nginx:1.27"), "create", "-f", "-")

	done := c.background("wait", "--for=condition=Ready", "pod/p", "-n", ns, "--timeout=20s")
	c.ok(t, "patch", "pod", "p", "-n", ns, "--subresource=status", "--type=merge",
		"-p", `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`)
	if r := <-done; r.err != nil || r.stdout != "pod/p condition met\n" {
		t.Errorf("wait --for=condition=Ready: %v, stdout %q, stderr %q; want condition met", r.err, r.stdout, r.stderr)
	}

	c.ok(t, "patch", "deploy", "web", "-n", ns, "--subresource=status", "--type=merge",
		"-p", `{"status":{"observedGeneration":1,"replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2}}`)
	if got := c.ok(t, "rollout", "status", "deployment/web", "-n", ns, "--timeout=20s"); got != "deployment \"web\" successfully rolled out\n" {
		t.Errorf("rollout status = %q; want successfully rolled out", got)
	}
}
