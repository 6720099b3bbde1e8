package main

import (
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCheckCommand runs `skiff check` on this machine with a port held
// by the test: that check fails (exit 1) and says how to fix it, and
// every check prints one verdict line.
func TestCheckCommand(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	code, out, errs := runCLI("check", "--config", "", "--data-dir", dir, "--listen", busy.Addr().String(),
		"--agent-listen", "127.0.0.1:0", "--containerd", filepath.Join(dir, "none.sock"))
	if code != 1 {
		t.Errorf("skiff check with a busy port = %d (stderr %q); want 1", code, errs)
	}
	wantLines := []string{
		`^(ok|warn|fail) +kernel +\S+`,
		`^(ok|warn|fail) +cgroups +v[12]`,
		`^fail +port +` + regexp.QuoteMeta(busy.Addr().String()) + ` \(--listen\) is in use$`,
		`^ +fix: stop what listens there .* or set --listen$`,
		`^ok +port +127\.0\.0\.1:0 \(--agent-listen\) is free$`,
		`^ok +data-dir +` + regexp.QuoteMeta(dir) + ` is writable$`,
		`^(ok|warn|fail) +memory +memory\.available=`,
		`^(ok|warn|fail) +containerd `,
		`^\d+ failed, \d+ warnings: skiff will not work here`,
	}
	for _, w := range wantLines {
		if !regexp.MustCompile(`(?m)` + w).MatchString(out) {
			t.Errorf("skiff check output has no line matching %s:\n%s", w, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !regexp.MustCompile(`^(ok|warn|fail) |^ +fix: |^\d+ failed|^\d+ warnings|^all \d+`).MatchString(line) {
			t.Errorf("skiff check printed an unexpected line %q", line)
		}
	}
}

func TestCheckUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--config", "", "--eviction-hard", "memory.available<lots"}, "eviction-hard"},
		{[]string{"check", "--config", "", "extra"}, "takes no arguments"},
		{[]string{"check", "--config", "/nonexistent.yaml"}, "config file"},
	} {
		if code, _, errs := runCLI(tt.args...); code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("run(%q) = %d, %q; want 2, ~%q", tt.args, code, errs, tt.want)
		}
	}
	if code, out, _ := runCLI("check", "-h"); code != 0 || !strings.Contains(out, "Usage: skiff check") {
		t.Errorf("skiff check -h = %d, %q", code, out)
	}
}
