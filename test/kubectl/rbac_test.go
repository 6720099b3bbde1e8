package kubectl

import (
	"strings"
	"testing"
)

// TestServiceAccountViewToken is the user journey docs/security.md
// describes: create a service account, bind it the view role in one
// namespace, make a token for it, and use that token: kubectl auth can-i
// and auth whoami answer for it, and the server enforces it.
func TestServiceAccountViewToken(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.ok(t, "create", "serviceaccount", "alice", "-n", ns)
	c.ok(t, "create", "rolebinding", "alice-view", "--clusterrole=view", "--serviceaccount="+ns+":alice", "-n", ns)
	token := strings.TrimSpace(c.ok(t, "create", "token", "alice", "-n", ns, "--duration", "1h"))
	if token == "" {
		t.Fatal("kubectl create token printed nothing")
	}
	as := []string{"--token", token}

	// The admin's kubeconfig, with alice's token instead.
	canI := func(args ...string) string {
		t.Helper()
		r := c.run(t, "", nil, append(append([]string{"auth", "can-i"}, args...), as...)...)
		return strings.TrimSpace(r.stdout)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"list", "pods", "-n", ns}, "yes"},
		{[]string{"get", "deployments.apps", "-n", ns}, "yes"},
		{[]string{"create", "pods", "-n", ns}, "no"},
		{[]string{"get", "secrets", "-n", ns}, "no"},
		{[]string{"list", "pods", "-n", "default"}, "no"},
		{[]string{"delete", "nodes"}, "no"},
	}
	for _, tt := range tests {
		if got := canI(tt.args...); got != tt.want {
			t.Errorf("kubectl auth can-i %s as alice = %q; want %q", strings.Join(tt.args, " "), got, tt.want)
		}
	}
	if got := strings.TrimSpace(c.ok(t, "auth", "can-i", "delete", "nodes")); got != "yes" {
		t.Errorf("kubectl auth can-i delete nodes as the admin = %q; want yes", got)
	}

	who := c.ok(t, append([]string{"auth", "whoami"}, as...)...)
	if !strings.Contains(who, "system:serviceaccount:"+ns+":alice") || !strings.Contains(who, "system:serviceaccounts:"+ns) {
		t.Errorf("kubectl auth whoami as alice:\n%s", who)
	}
	if who := c.ok(t, "auth", "whoami"); !strings.Contains(who, "skiff:admin") || !strings.Contains(who, "system:masters") {
		t.Errorf("kubectl auth whoami as the admin:\n%s", who)
	}

	// The server holds the token to it.
	c.stdinOK(t, configMapYAML(ns, "cm"), "create", "-f", "-")
	c.ok(t, append([]string{"get", "configmaps", "-n", ns}, as...)...)
	stderr := c.fails(t, "", append([]string{"delete", "configmap", "cm", "-n", ns}, as...)...)
	if !strings.Contains(stderr, "Forbidden") || !strings.Contains(stderr, "cannot delete resource") {
		t.Errorf("delete as a viewer: stderr %q; want Forbidden", stderr)
	}
	c.fails(t, "", append([]string{"get", "pods", "-n", "default"}, as...)...)

	// Deleting the account revokes its tokens.
	c.ok(t, "delete", "serviceaccount", "alice", "-n", ns)
	stderr = c.fails(t, "", append([]string{"get", "configmaps", "-n", ns}, as...)...)
	if !strings.Contains(stderr, "Unauthorized") && !strings.Contains(stderr, "provide credentials") {
		t.Errorf("a revoked token: stderr %q; want Unauthorized", stderr)
	}
}

// TestNamespaceEditToken gives a token namespace edit rights.
func TestNamespaceEditToken(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.ok(t, "create", "sa", "ci", "-n", ns)
	c.ok(t, "create", "rolebinding", "ci-edit", "--clusterrole=edit", "--serviceaccount="+ns+":ci", "-n", ns)
	token := strings.TrimSpace(c.ok(t, "create", "token", "ci", "-n", ns))
	as := []string{"--token", token}
	c.stdinOK(t, configMapYAML(ns, "cm"), append([]string{"apply", "-f", "-"}, as...)...)
	c.ok(t, append([]string{"delete", "configmap", "cm", "-n", ns}, as...)...)
	if got := strings.TrimSpace(c.run(t, "", nil, append([]string{"auth", "can-i", "create", "rolebindings", "-n", ns}, as...)...).stdout); got != "no" {
		t.Errorf("an editor may create rolebindings: can-i = %q; want no", got)
	}
}

// TestAuthCanIList lists a viewer's rules (SelfSubjectRulesReview).
func TestAuthCanIList(t *testing.T) {
	t.Parallel()
	c := start(t)
	ns := c.namespace(t)
	c.ok(t, "create", "sa", "v", "-n", ns)
	c.ok(t, "create", "rolebinding", "v-view", "--clusterrole=view", "--serviceaccount="+ns+":v", "-n", ns)
	token := strings.TrimSpace(c.ok(t, "create", "token", "v", "-n", ns))
	out := c.ok(t, "auth", "can-i", "--list", "-n", ns, "--token", token)
	for _, want := range []string{"pods", "deployments.apps", "selfsubjectaccessreviews.authorization.k8s.io", "[/api/*]"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl auth can-i --list as a viewer lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secrets") {
		t.Errorf("kubectl auth can-i --list as a viewer lists secrets:\n%s", out)
	}
}
