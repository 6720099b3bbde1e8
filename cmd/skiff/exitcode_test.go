package main

import (
	"bytes"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// takenPort listens on a loopback port for the test's duration and
// returns its address: the port an agent is told to use but cannot.
func takenPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// TestAgentPortTakenExitsNonZero: `skiff agent` whose log endpoint port
// is taken fails at once with exit code 1 and a message naming the
// flag and the cause (it used to log "cannot talk to the server" and
// exit 0). No server and no containerd are needed: the port is the first
// thing the agent takes.
func TestAgentPortTakenExitsNonZero(t *testing.T) {
	addr := takenPort(t)
	start := time.Now()
	code, _, errs := runCLI("agent", "--config", "", "--server", "https://127.0.0.1:1", "--data-dir", t.TempDir(),
		"--node-name", "exit-test", "--agent-listen", addr, "--cgroup-root", "/skiff-exit-test")
	if code != 1 || !strings.Contains(errs, "--agent-listen") || !strings.Contains(errs, addr) || !strings.Contains(errs, "address already in use") {
		t.Fatalf("skiff agent with %s taken: exit %d, stderr %q; want 1 naming --agent-listen, the address and the cause", addr, code, errs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("skiff agent took %v to fail; want at once", d)
	}
}

// TestServerLocalAgentPortTakenExitsNonZero: `skiff server` whose local
// agent cannot start (its port taken) stops and exits 1 naming the local
// agent and the cause, rather than serve on as a cluster that can run
// nothing.
func TestServerLocalAgentPortTakenExitsNonZero(t *testing.T) {
	addr := takenPort(t)
	code, out, errs := runCLI("server", "--config", "", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--node-name", "exit-test", "--agent-listen", addr, "--cgroup-root", "/skiff-exit-test")
	if code != 1 || !strings.Contains(errs, "local agent") || !strings.Contains(errs, "address already in use") {
		t.Fatalf("skiff server with the agent's %s taken: exit %d, stderr %q; want 1 naming the local agent and the cause", addr, code, errs)
	}
	if !strings.Contains(out, "skiff server is up") {
		t.Errorf("stdout %q; want the server to have started before its agent failed", out)
	}
}

// TestBuiltBinaryExitCodeAgentPortTaken runs the built skiff binary, so
// the exit status is the process's own (os.Exit in main).
func TestBuiltBinaryExitCodeAgentPortTaken(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "skiff")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := takenPort(t)
	cmd := exec.Command(bin, "agent", "--config", "", "--server", "https://127.0.0.1:1", "--data-dir", t.TempDir(),
		"--node-name", "exit-test", "--agent-listen", addr, "--cgroup-root", "/skiff-exit-test")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("skiff agent with %s taken: %v; want exit status 1 (stderr %q)", addr, err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "address already in use") {
		t.Fatalf("stderr %q; want the cause named", stderr.String())
	}
}
