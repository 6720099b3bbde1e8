package fake

import (
	"context"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
)

// MethodExec is Exec's name in Call.Method.
const MethodExec = "Exec"

// ExecFunc answers an Exec in the fake: the container's status and
// config, the command and the timeout.
type ExecFunc func(c runtime.ContainerStatus, cfg runtime.ContainerConfig, cmd []string, timeout time.Duration) (int, []byte, error)

// SetExec makes Exec answer with fn (nil: every command exits 0 with no
// output).
func (r *Runtime) SetExec(fn ExecFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.execFn = fn
}

// Exec implements runtime.Runtime: the container must be running.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (int, []byte, error) {
	r.mu.Lock()
	if err := r.recordLocked(Call{Method: MethodExec, Arg: id}); err != nil {
		r.mu.Unlock()
		return -1, nil, err
	}
	c, ok := r.containers[id]
	fn := r.execFn
	var st runtime.ContainerStatus
	var cfg runtime.ContainerConfig
	if ok {
		st, cfg = c.status, c.cfg
	}
	r.mu.Unlock()
	switch {
	case !ok:
		return -1, nil, fmt.Errorf("exec in %s: %w", id, runtime.ErrNotFound)
	case st.State != runtime.StateRunning:
		return -1, nil, fmt.Errorf("exec in %s: container is %s: %w", id, st.State, runtime.ErrInvalidConfig)
	case len(cmd) == 0:
		return -1, nil, fmt.Errorf("exec in %s: empty command: %w", id, runtime.ErrInvalidConfig)
	case fn == nil:
		return 0, nil, nil
	}
	return fn(st, cfg, cmd, timeout)
}
