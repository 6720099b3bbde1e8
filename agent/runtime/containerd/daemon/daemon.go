package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"

	"github.com/skiffhq/skiff/internal/clock"
)

// maxSocketPath is the longest unix socket path the kernel accepts
// (sun_path is 108 bytes including the terminating NUL).
const maxSocketPath = 107

// Config describes one managed containerd.
type Config struct {
	// Binary is the containerd executable; "" looks "containerd" up on PATH.
	Binary string
	// Dir holds config.toml, root/, state/, the log and (when the path is
	// short enough) the socket.
	Dir string
	// Socket is the gRPC socket; "" means Dir/containerd.sock, or
	// /run/skiff/containerd-<hash of Dir>.sock when that path is too long
	// for a unix socket.
	Socket string
	// ReadyTimeout bounds the wait for a started daemon to answer;
	// 0 means 30s.
	ReadyTimeout time.Duration
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Clock times the restart backoff; nil means the wall clock.
	Clock clock.Clock
}

// Validate checks cfg and fills its defaults.
func (c *Config) Validate() error {
	if c.Dir == "" || !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("containerd daemon: dir %q must be an absolute path", c.Dir)
	}
	if c.Binary == "" {
		p, err := exec.LookPath("containerd")
		if err != nil {
			return fmt.Errorf("containerd daemon: no containerd binary on PATH: %w", err)
		}
		c.Binary = p
	}
	if c.Socket == "" {
		c.Socket = filepath.Join(c.Dir, "containerd.sock")
		if len(c.Socket+".ttrpc") > maxSocketPath {
			sum := sha256.Sum256([]byte(c.Dir))
			c.Socket = "/run/skiff/containerd-" + hex.EncodeToString(sum[:6]) + ".sock"
		}
	}
	if len(c.Socket+".ttrpc") > maxSocketPath {
		return fmt.Errorf("containerd daemon: socket path %q is too long for a unix socket", c.Socket)
	}
	if c.ReadyTimeout == 0 {
		c.ReadyTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Clock = clock.Or(c.Clock)
	return nil
}

// disabledPlugins are the plugins a skiff daemon does not load.
var disabledPlugins = []string{
	"io.containerd.grpc.v1.cri",
	"io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs",
	"io.containerd.snapshotter.v1.zfs",
	"io.containerd.snapshotter.v1.devmapper",
	"io.containerd.internal.v1.tracing",
	"io.containerd.tracing.processor.v1.otlp",
}

// ConfigTOML returns the daemon configuration (containerd 1.6+ config
// version 2) for cfg, which must be validated.
func ConfigTOML(cfg Config) string {
	q := strconv.Quote
	var b strings.Builder
	b.WriteString("version = 2\n")
	fmt.Fprintf(&b, "root = %s\nstate = %s\n", q(filepath.Join(cfg.Dir, "root")), q(filepath.Join(cfg.Dir, "state")))
	quoted := make([]string, len(disabledPlugins))
	for i, p := range disabledPlugins {
		quoted[i] = q(p)
	}
	fmt.Fprintf(&b, "disabled_plugins = [%s]\n", strings.Join(quoted, ", "))
	fmt.Fprintf(&b, "\n[grpc]\n  address = %s\n", q(cfg.Socket))
	fmt.Fprintf(&b, "\n[ttrpc]\n  address = %s\n", q(cfg.Socket+".ttrpc"))
	b.WriteString("\n[debug]\n  address = \"\"\n\n[metrics]\n  address = \"\"\n")
	fmt.Fprintf(&b, "\n[plugins.\"io.containerd.internal.v1.opt\"]\n  path = %s\n", q(filepath.Join(cfg.Dir, "opt")))
	return b.String()
}

// WriteConfig creates cfg.Dir and writes its config.toml, returning the
// file's path.
func WriteConfig(cfg Config) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	for _, d := range []string{cfg.Dir, filepath.Dir(cfg.Socket)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("containerd daemon: %w", err)
		}
	}
	p := filepath.Join(cfg.Dir, "config.toml")
	if err := os.WriteFile(p, []byte(ConfigTOML(cfg)), 0o600); err != nil {
		return "", fmt.Errorf("containerd daemon: write config: %w", err)
	}
	return p, nil
}

// Process is one running containerd daemon started by Start.
type Process struct {
	// Socket is the daemon's gRPC socket.
	Socket string
	// LogPath is the file the daemon's output goes to.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// Start writes cfg's config, starts containerd and returns once it
// answers on its socket. The daemon runs until Stop (ctx only bounds the
// start-up).
func Start(ctx context.Context, cfg Config) (*Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	confPath, err := WriteConfig(cfg)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(cfg.Dir, "containerd.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("containerd daemon: open log: %w", err)
	}
	// A stale socket from a daemon that died would make ours fail to bind.
	_ = os.Remove(cfg.Socket)
	_ = os.Remove(cfg.Socket + ".ttrpc")
	cmd := exec.Command(cfg.Binary, "--config", confPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("containerd daemon: start %s: %w", cfg.Binary, err)
	}
	p := &Process{Socket: cfg.Socket, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	if err := waitReady(ctx, cfg, p); err != nil {
		err = fmt.Errorf("containerd daemon: %w (log: %s)", err, tail(logPath, 5))
		if serr := p.Stop(5 * time.Second); serr != nil {
			err = errors.Join(err, fmt.Errorf("stop the daemon that did not start: %w", serr))
		}
		return nil, err
	}
	cfg.Logger.Info("containerd started", "pid", cmd.Process.Pid, "socket", cfg.Socket)
	return p, nil
}

func waitReady(ctx context.Context, cfg Config, p *Process) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.ReadyTimeout)
	defer cancel()
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	c, err := client.New(cfg.Socket, client.WithTimeout(cfg.ReadyTimeout))
	if err != nil {
		return err
	}
	defer c.Close()
	ok, err := c.IsServing(ctx)
	select {
	case <-p.done:
		if p.err == nil {
			return errors.New("containerd exited during start-up (status 0)")
		}
		return fmt.Errorf("containerd exited during start-up: %w", p.err)
	default:
	}
	if err != nil {
		return fmt.Errorf("containerd did not answer on %s: %w", cfg.Socket, err)
	}
	if !ok {
		return fmt.Errorf("containerd on %s is not serving", cfg.Socket)
	}
	return nil
}

// Done is closed when the daemon has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the daemon's exit error, once Done is closed.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Pid is the daemon's process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM, waits up to grace, then SIGKILLs, and returns once
// the daemon has exited. Its shims keep running.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("containerd daemon: stop: %w", err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("containerd daemon: kill: %w", err)
	}
	<-p.done
	return nil
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return path
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 8192 {
		_, _ = f.Seek(-8192, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return path + ": " + strings.Join(lines, " | ")
}
