package containerd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/skiffhq/skiff/agent/runtime"
)

// maxExecOutput caps what Exec keeps of a command's output, as the
// kubelet does for probe output.
const maxExecOutput = 10 << 10

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *cappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Exec runs cmd in the running container id, with the container's
// environment, user and working directory, and returns its exit code and
// combined output (at most 10 KiB). After timeout the command is killed
// and Exec returns runtime.ErrExecTimeout.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, []byte, error) {
	if len(cmd) == 0 {
		return -1, nil, fmt.Errorf("exec in %s: empty command: %w", id, runtime.ErrInvalidConfig)
	}
	ctx = r.nsctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return -1, nil, translate("load container "+id, err)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return -1, nil, translate("spec of "+id, err)
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return -1, nil, translate("task of "+id, err)
	}
	if spec.Process == nil {
		return -1, nil, fmt.Errorf("exec in %s: container has no process spec: %w", id, runtime.ErrInvalidConfig)
	}
	pspec := *spec.Process
	pspec.Args = cmd
	pspec.Terminal = false
	var b [6]byte
	_, _ = rand.Read(b[:])
	execID := "exec-" + hex.EncodeToString(b[:])
	out := &cappedBuffer{max: maxExecOutput}
	p, err := task.Exec(ctx, execID, &pspec, cio.NewCreator(cio.WithStreams(nil, out, out)))
	if err != nil {
		return -1, nil, translate("exec in "+id, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = p.Delete(dctx, client.WithProcessKill)
	}()
	exitCh, err := p.Wait(ctx)
	if err != nil {
		return -1, nil, translate("wait exec in "+id, err)
	}
	if err := p.Start(ctx); err != nil {
		return -1, nil, translate("start exec in "+id, err)
	}
	timer := r.clock.NewTimer(timeout)
	defer timer.Stop()
	select {
	case st := <-exitCh:
		code, _, werr := st.Result()
		if werr != nil {
			return -1, out.Bytes(), translate("exec in "+id, werr)
		}
		// the output streams may still be draining
		p.IO().Wait()
		return int(code), out.Bytes(), nil
	case <-timer.C():
		_ = p.Kill(ctx, syscall.SIGKILL)
		return -1, out.Bytes(), fmt.Errorf("exec %q in %s: %w after %s", cmd[0], id, runtime.ErrExecTimeout, timeout)
	case <-ctx.Done():
		_ = p.Kill(context.WithoutCancel(ctx), syscall.SIGKILL)
		return -1, out.Bytes(), ctx.Err()
	}
}
