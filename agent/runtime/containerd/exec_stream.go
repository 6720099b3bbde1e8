package containerd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/skiffhq/skiff/agent/runtime"
)

// ExecStream runs o.Cmd in the running container id with the container's
// environment, user and working directory, wired to o's streams (and a
// terminal with o.TTY), and returns its exit code once it exits. When
// ctx ends first the command is killed and ctx's error returned.
func (r *Runtime) ExecStream(ctx context.Context, id string, o runtime.ExecOptions) (int, error) {
	if len(o.Cmd) == 0 {
		return -1, fmt.Errorf("exec in %s: empty command: %w", id, runtime.ErrInvalidConfig)
	}
	ctx = r.nsctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return -1, translate("load container "+id, err)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return -1, translate("spec of "+id, err)
	}
	if spec.Process == nil {
		return -1, fmt.Errorf("exec in %s: container has no process spec: %w", id, runtime.ErrInvalidConfig)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return -1, translate("task of "+id, err)
	}
	pspec := *spec.Process
	pspec.Args = o.Cmd
	pspec.Terminal = o.TTY
	if o.TTY && o.Resize != nil {
		pspec.ConsoleSize = r.firstTermSize(ctx, o.Resize)
	}
	if o.TTY {
		pspec.Env = append(append([]string(nil), pspec.Env...), "TERM=xterm")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	execID := "exec-" + hex.EncodeToString(b[:])

	// stdin's EOF must reach the command (tar x, cat): closeStdin fires
	// once the copy has drained it, and CloseIO tells the shim.
	stdinDone := make(chan struct{})
	var stdin io.Reader
	if o.Stdin != nil {
		stdin = &eofNotifier{r: o.Stdin, done: stdinDone}
	}
	// Without a terminal, containerd 1.6's shim wants both output FIFOs
	// (an empty path fails the exec); with one, only stdout.
	stdout, stderr := o.Stdout, o.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	switch {
	case o.TTY:
		stderr = nil
	case stderr == nil:
		stderr = io.Discard
	}
	opts := []cio.Opt{cio.WithStreams(stdin, stdout, stderr)}
	if o.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	p, err := task.Exec(ctx, execID, &pspec, cio.NewCreator(opts...))
	if err != nil {
		return -1, translate("exec in "+id, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = p.Delete(dctx, client.WithProcessKill)
	}()
	exitCh, err := p.Wait(ctx)
	if err != nil {
		return -1, translate("wait exec in "+id, err)
	}
	if err := p.Start(ctx); err != nil {
		return -1, translate("start exec in "+id, err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	if o.Stdin != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-stdinDone:
				if err := p.CloseIO(sctx, client.WithStdinCloser); err != nil && sctx.Err() == nil {
					r.log.Debug("close exec stdin", "container", id, "err", err)
				}
			case <-sctx.Done():
			}
		}()
	}
	if o.TTY && o.Resize != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case sz, ok := <-o.Resize:
					if !ok {
						return
					}
					if err := p.Resize(sctx, uint32(sz.Width), uint32(sz.Height)); err != nil && sctx.Err() == nil {
						r.log.Debug("resize exec tty", "container", id, "err", err)
					}
				case <-sctx.Done():
					return
				}
			}
		}()
	}
	select {
	case st := <-exitCh:
		code, _, werr := st.Result()
		if werr != nil {
			return -1, translate("exec in "+id, werr)
		}
		// The output may still be draining.
		p.IO().Wait()
		return int(code), nil
	case <-ctx.Done():
		_ = p.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		return -1, ctx.Err()
	}
}

// eofNotifier closes done when r reaches its end.
type eofNotifier struct {
	r    io.Reader
	done chan struct{}
	once sync.Once
}

func (e *eofNotifier) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.done) })
	}
	return n, err
}

// firstSizeWait bounds how long an exec with a terminal waits for the
// client's first size before its command is created.
const firstSizeWait = 500 * time.Millisecond

// firstTermSize returns the client's first terminal size, to create the
// command's terminal with. kubectl and the dashboard send it at once,
// but it arrived after the command had started, so a quick `stty size`
// (or a shell's first prompt) saw a 0x0 terminal now and then. Nil
// (runc's default size) when none comes within firstSizeWait; later
// sizes are applied as they come.
func (r *Runtime) firstTermSize(ctx context.Context, resize <-chan runtime.TermSize) *specs.Box {
	t := r.clock.NewTimer(firstSizeWait)
	defer t.Stop()
	select {
	case sz, ok := <-resize:
		if ok && sz.Width > 0 && sz.Height > 0 {
			return &specs.Box{Width: uint(sz.Width), Height: uint(sz.Height)}
		}
	case <-t.C():
	case <-ctx.Done():
	}
	return nil
}
