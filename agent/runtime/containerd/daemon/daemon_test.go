package daemon

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"

	"github.com/skiffhq/skiff/internal/backoff"
	"github.com/skiffhq/skiff/internal/clock"
)

func TestRestartDelay(t *testing.T) {
	bo := backoff.Backoff{Min: minBackoff, Max: maxBackoff, NoJitter: true}
	for i, tc := range []struct {
		ran, want time.Duration
	}{
		{0, time.Second},
		{time.Second, 2 * time.Second},
		{0, 4 * time.Second},
		{0, 8 * time.Second},
		{0, 16 * time.Second},
		{0, 30 * time.Second},
		{0, 30 * time.Second},
		{2 * time.Minute, time.Second}, // a daemon that ran a while starts over
	} {
		if got := restartDelay(&bo, tc.ran); got != tc.want {
			t.Errorf("restartDelay #%d (ran %v) = %v; want %v", i, tc.ran, got, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{Dir: "relative", Binary: "/bin/true"}
	if err := c.Validate(); err == nil {
		t.Error("Validate accepted a relative dir")
	}
	long := "/" + strings.Repeat("d", 120)
	c = Config{Dir: long, Binary: "/bin/true"}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate(long dir) = %v", err)
	}
	if !strings.HasPrefix(c.Socket, "/run/skiff/containerd-") {
		t.Errorf("socket for a long dir = %q; want one under /run/skiff", c.Socket)
	}
	c = Config{Dir: "/tmp/x", Binary: "/bin/true", Socket: long + ".sock"}
	if err := c.Validate(); err == nil {
		t.Error("Validate accepted a socket path longer than a unix socket allows")
	}
	c = Config{Dir: "/tmp/x", Binary: "/bin/true"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	toml := ConfigTOML(c)
	for _, want := range []string{`root = "/tmp/x/root"`, `state = "/tmp/x/state"`, `address = "/tmp/x/containerd.sock"`, `"io.containerd.grpc.v1.cri"`} {
		if !strings.Contains(toml, want) {
			t.Errorf("config lacks %s:\n%s", want, toml)
		}
	}
}

func serving(socket string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c, err := client.New(socket)
	if err != nil {
		return false
	}
	defer c.Close()
	ok, err := c.IsServing(ctx)
	return err == nil && ok
}

// TestIntegrationSuperviseRestarts runs the real containerd: a daemon
// that is killed is restarted after the backoff, and ending the context
// stops it.
func TestIntegrationSuperviseRestarts(t *testing.T) {
	if _, err := exec.LookPath("containerd"); err != nil {
		t.Fatal("containerd is not installed (apt-get install containerd runc): ", err)
	}
	dir, err := os.MkdirTemp("/tmp", "skiff-sv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fake := clock.NewFake(time.Unix(1000, 0))
	cfg := Config{Dir: dir, Clock: fake}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	done := make(chan struct{})
	go func() { supervise(ctx, cfg, p); close(done) }()
	defer func() { cancel(); <-done }()

	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	fake.BlockUntil(1) // the backoff timer
	fake.Advance(time.Second)
	if !serving(cfg.Socket, 30*time.Second) {
		t.Fatal("containerd was not restarted after it was killed")
	}
	cancel()
	<-done
	if serving(cfg.Socket, 500*time.Millisecond) {
		t.Error("containerd still answers after the supervisor's context ended")
	}
}
