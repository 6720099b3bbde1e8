package containerd

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// TestIntegrationExec runs commands in a running busybox container on a
// real containerd: exit codes and output come back, a command past its
// timeout is killed, and a stopped container refuses.
func TestIntegrationExec(t *testing.T) {
	h := newHarness(t)
	sb := h.sandbox(false, api.PodQOSBestEffort, 0)
	cfg := h.config(sb, "sleeper", "echo ready > /tmp/ready; sleep 600")
	cfg.Env = []string{"GREETING=hi"}
	id := h.run(cfg)
	h.waitState(id, runtime.StateRunning)

	code, out, err := h.rt.Exec(h.ctx, id, []string{"sh", "-c", "cat /tmp/ready; echo $GREETING; echo err >&2; exit 3"}, 10*time.Second)
	// stdout and stderr come through separate pipes, so "err" may land
	// anywhere between the stdout lines.
	if err != nil || code != 3 || !strings.Contains(string(out), "ready\n") || !strings.Contains(string(out), "hi\n") || !strings.Contains(string(out), "err\n") {
		t.Fatalf("Exec = %d, %q, %v; want 3 with ready, hi and err", code, out, err)
	}
	code, _, err = h.rt.Exec(h.ctx, id, []string{"true"}, 10*time.Second)
	if err != nil || code != 0 {
		t.Fatalf("Exec(true) = %d, %v; want 0", code, err)
	}
	start := time.Now()
	_, _, err = h.rt.Exec(h.ctx, id, []string{"sleep", "30"}, 300*time.Millisecond)
	if !errors.Is(err, runtime.ErrExecTimeout) || time.Since(start) > 10*time.Second {
		t.Fatalf("Exec(sleep 30) with 300ms timeout = %v after %v; want ErrExecTimeout soon", err, time.Since(start))
	}
	if _, _, err := h.rt.Exec(h.ctx, id, nil, time.Second); !errors.Is(err, runtime.ErrInvalidConfig) {
		t.Fatalf("Exec(no command) = %v; want ErrInvalidConfig", err)
	}
	if err := h.rt.StopContainer(h.ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.rt.Exec(h.ctx, id, []string{"true"}, time.Second); err == nil {
		t.Fatal("Exec in a stopped container = nil error")
	}
}

// TestIntegrationExecTTYHasTheFirstSizeAtOnce: a command run with a
// terminal sees the client's first size from its start. The size was
// applied only after the command started, so a quick `stty size` (or a
// shell's first prompt) saw a 0x0 terminal now and then.
func TestIntegrationExecTTYHasTheFirstSizeAtOnce(t *testing.T) {
	h := newHarness(t)
	sb := h.sandbox(false, api.PodQOSBestEffort, 0)
	id := h.run(h.config(sb, "sleeper", "sleep 600"))
	h.waitState(id, runtime.StateRunning)
	for i := range 5 {
		resize := make(chan runtime.TermSize, 1)
		resize <- runtime.TermSize{Width: 101, Height: 31}
		var out strings.Builder
		code, err := h.rt.ExecStream(h.ctx, id, runtime.ExecOptions{Cmd: []string{"stty", "size"}, TTY: true, Stdout: &out, Resize: resize})
		if err != nil || code != 0 || !strings.Contains(out.String(), "31 101") {
			t.Fatalf("run %d: stty size with a 101x31 terminal = %d, %q, %v; want 0 and \"31 101\"", i+1, code, out.String(), err)
		}
	}
}
