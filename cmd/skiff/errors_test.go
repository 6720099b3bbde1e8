package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClientErrorsGolden(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	h.create("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: app, image: \"busybox:1.36\"}]\n")
	h.golden("logs-unavailable", h.run("logs", "web"))
	h.golden("logs-no-pod", h.run("logs"))
	h.golden("error-not-found", h.run("get", "deploy", "nope"))
	h.golden("error-bad-token", h.run("get", "pods", "--token", "not-a-token"))
	h.golden("error-bad-token-env", func() result {
		h.env[envToken] = "also-wrong"
		defer delete(h.env, envToken)
		return h.run("token", "list")
	}())
	h.golden("error-no-config", h.run("get", "pods", "--client-config", filepath.Join(h.dir, "absent.yaml")))
	h.golden("error-server-override", h.run("get", "pods", "--server", "http://insecure.example"))
}

func TestClientConfigFromHome(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	home := t.TempDir()
	data, err := os.ReadFile(h.info.ClientConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".skiff"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".skiff", "config.yaml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	h.env = map[string]string{"HOME": home}
	if r := h.run("get", "ns", "default"); r.code != 0 || !strings.Contains(r.stdout, "default") {
		t.Errorf("get ns with ~/.skiff/config.yaml = %d, %q, %q; want the default namespace", r.code, r.stdout, r.stderr)
	}
}

func TestClientCommandsHelp(t *testing.T) {
	for _, cmd := range [][]string{{"get"}, {"apply"}, {"delete"}, {"describe"}, {"logs"}, {"token"}, {"token", "create"}, {"token", "list"}, {"token", "delete"}} {
		code, out, errs := runCLI(append(cmd, "-h")...)
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "Flags:") || errs != "" {
			t.Errorf("skiff %s -h = %d, stdout %q, stderr %q; want 0 and help on stdout", strings.Join(cmd, " "), code, out, errs)
		}
	}
}
