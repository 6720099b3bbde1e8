package containerd

import (
	"context"
	"errors"
	"fmt"
	"github.com/containerd/containerd/api/services/tasks/v1"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"

	"github.com/skiffhq/skiff/agent/runtime"
)

// Labels of this package's own on containers.
const (
	labelLogPath    = "io.skiff.log.path"
	labelImageID    = "io.skiff.image.id"
	labelStartedAt  = "io.skiff.started.at"
	labelExitCode   = "io.skiff.exit.code"
	labelExitAt     = "io.skiff.exit.at"
	labelExitReason = "io.skiff.exit.reason"
)

// runcRuntime is the shim every container runs under.
const runcRuntime = "io.containerd.runc.v2"

// Exit reasons, as Kubernetes reports them.
const (
	ReasonOOMKilled = "OOMKilled"
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
)

// CreateContainer creates the container (its snapshot and spec, no task
// yet) with ID runtime.ContainerID(cfg.PodUID, cfg.Name, cfg.RestartCount).
func (r *Runtime) CreateContainer(ctx context.Context, cfg runtime.ContainerConfig) (string, error) {
	if err := validateConfig(cfg); err != nil {
		return "", err
	}
	ctx = r.nsctx(ctx)
	id := runtime.ContainerID(cfg.PodUID, cfg.Name, cfg.RestartCount)
	if _, err := r.client.LoadContainer(ctx, id); err == nil {
		return "", fmt.Errorf("container %s: %w", id, runtime.ErrAlreadyExists)
	} else if !errdefs.IsNotFound(err) {
		return "", translate("load container "+id, err)
	}
	img, err := r.client.GetImage(ctx, cfg.Image)
	if err != nil {
		return "", translate("image "+cfg.Image, err)
	}
	if err := r.unpack(ctx, img); err != nil {
		return "", err
	}
	ispec, err := img.Spec(ctx)
	if err != nil {
		return "", translate("image config of "+cfg.Image, err)
	}
	imgID, err := img.Config(ctx)
	if err != nil {
		return "", translate("image config of "+cfg.Image, err)
	}
	// A snapshot without its container is left from a create that died
	// half-way: it is ours to replace.
	sn := r.client.SnapshotService(r.snap)
	if _, err := sn.Stat(ctx, id); err == nil {
		if err := sn.Remove(ctx, id); err != nil && !errdefs.IsNotFound(err) {
			return "", translate("remove stale snapshot "+id, err)
		}
	}
	labels := map[string]string{
		runtime.LabelPodUID:        cfg.PodUID,
		runtime.LabelPodName:       cfg.PodName,
		runtime.LabelPodNamespace:  cfg.Namespace,
		runtime.LabelContainerName: cfg.Name,
		runtime.LabelRestartCount:  strconv.Itoa(cfg.RestartCount),
		runtime.LabelHash:          cfg.Hash,
		labelLogPath:               cfg.LogPath,
		labelImageID:               imgID.Digest.String(),
	}
	if cfg.Init {
		labels[runtime.LabelInit] = "true"
	}
	opts := append([]oci.SpecOpts{oci.WithImageConfig(img)}, specOpts(id, cfg, ispec.Config)...)
	ctx, cancel := settled(ctx)
	defer cancel()
	_, err = r.client.NewContainer(ctx, id,
		client.WithImage(img),
		client.WithImageStopSignal(img, "SIGTERM"),
		client.WithSnapshotter(r.snap),
		client.WithNewSnapshot(id, img),
		client.WithRuntime(runcRuntime, nil),
		client.WithNewSpec(opts...),
		client.WithContainerLabels(labels),
	)
	if err != nil {
		if rerr := sn.Remove(ctx, id); rerr != nil && !errdefs.IsNotFound(rerr) {
			r.log.Warn("remove snapshot of failed container", "id", id, "err", rerr)
		}
		return "", translate("create container "+id, err)
	}
	r.rememberPod(id, cfg.PodUID)
	return id, nil
}

// StartContainer creates the container's task, with stdout and stderr
// appended to its log file by the shim, and starts it.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx = r.nsctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return translate("load container "+id, err)
	}
	labels, err := c.Labels(ctx)
	if err != nil {
		return translate("labels of "+id, err)
	}
	if _, done := labels[labelExitCode]; done {
		return fmt.Errorf("container %s has already run: %w", id, runtime.ErrInvalidConfig)
	}
	logPath := labels[labelLogPath]
	if logPath == "" {
		return fmt.Errorf("container %s has no log path label: %w", id, runtime.ErrInvalidConfig)
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fmt.Errorf("log dir of %s: %w", id, err)
	}
	// From here on the calls start a shim and a container in it:
	// containerd 1.6 abandons both when a task's creation is cancelled
	// halfway (the shim process runs on, and runc's init waits in the
	// pod's cgroup, with no task left in containerd to find them by).
	// So they run to their end on a context of their own, bounded,
	// whatever becomes of the caller's (a pod deleted while it starts);
	// the caller's cancel is honoured between them.
	callerCtx := ctx
	ctx, cancel := settled(ctx)
	defer cancel()
	task, err := c.NewTask(ctx, cio.LogFile(logPath))
	if errdefs.IsAlreadyExists(err) {
		task, err = c.Task(ctx, nil)
		if errdefs.IsNotFound(err) {
			// A task whose creation containerd's restart cut short: the
			// shim holds it, runc never made the container. Delete it and
			// create the task again, or the pod never starts.
			r.log.Info("deleting a task whose creation was cut short", "id", id, "err", err)
			if _, derr := r.client.TaskService().Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: id}); derr != nil && !errdefs.IsNotFound(derr) {
				return translate("delete stale task "+id, derr)
			}
			task, err = c.NewTask(ctx, cio.LogFile(logPath))
		}
	}
	if err != nil {
		return translate("create task "+id, err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return translate("task status "+id, err)
	}
	if st.Status != client.Created {
		return nil // started already (a retry after a crash)
	}
	if err := callerCtx.Err(); err != nil {
		// Left Created: stopping the container kills and deletes it.
		return err
	}
	if err := task.Start(ctx); err != nil {
		if _, derr := task.Delete(ctx, client.WithProcessKill); derr != nil {
			r.log.Warn("delete task that failed to start", "id", id, "err", derr)
		}
		return translate("start container "+id, err)
	}
	if _, err := c.SetLabels(ctx, map[string]string{labelStartedAt: r.clock.Now().UTC().Format(time.RFC3339Nano)}); err != nil {
		return translate("record start of "+id, err)
	}
	return nil
}

// StopContainer sends the container's stop signal (the image's, else
// SIGTERM), waits up to grace, SIGKILLs, and returns once it has exited
// and its exit is recorded.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.nsctx(ctx)
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return translate("load container "+id, err)
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil // never started, or exited and reaped
	}
	if err != nil {
		return translate("task of "+id, err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return translate("task status "+id, err)
	}
	if st.Status == client.Stopped {
		_, err := r.reap(ctx, c)
		return err
	}
	exitCh, err := task.Wait(ctx)
	if err != nil {
		return translate("wait for "+id, err)
	}
	sig, err := client.GetStopSignal(ctx, c, syscall.SIGTERM)
	if err != nil {
		sig = syscall.SIGTERM
	}
	if st.Status == client.Created || grace <= 0 {
		sig = syscall.SIGKILL // never started, or no grace (hard eviction): kill at once
	}
	if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
		return translate("signal "+id, err)
	}
	if sig != syscall.SIGKILL && !r.waitExit(ctx, exitCh, grace) {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.log.Info("container ignored its stop signal; killing it", "id", id, "grace", grace)
		if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
			return translate("kill "+id, err)
		}
	}
	select {
	case <-exitCh:
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err = r.reap(ctx, c)
	return err
}

// waitExit reports whether the task exited within d.
func (r *Runtime) waitExit(ctx context.Context, exitCh <-chan client.ExitStatus, d time.Duration) bool {
	t := r.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-exitCh:
		return true
	case <-t.C():
		return false
	case <-ctx.Done():
		return false
	}
}

// RemoveContainer deletes a stopped container's task, the container and
// its snapshot. Its log file stays. A running container is an error.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := settled(r.nsctx(ctx)) // deletes that shut shims down: see StartContainer
	defer cancel()
	c, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		r.forget(id)
		return nil
	}
	if err != nil {
		return translate("load container "+id, err)
	}
	if task, err := c.Task(ctx, nil); err == nil {
		st, err := task.Status(ctx)
		if err != nil {
			return translate("task status "+id, err)
		}
		switch st.Status {
		case client.Running, client.Paused, client.Pausing:
			return fmt.Errorf("container %s is running: stop it before removing it", id)
		}
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return translate("delete task "+id, err)
		}
	} else if !errdefs.IsNotFound(err) {
		return translate("task of "+id, err)
	}
	if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return translate("delete container "+id, err)
	}
	r.forget(id)
	return nil
}

// exitFacts is what is known of an exited container.
type exitFacts struct {
	code   int32
	at     time.Time
	reason string
}

func factsFromLabels(l map[string]string) (exitFacts, bool) {
	cs, ok := l[labelExitCode]
	if !ok {
		return exitFacts{}, false
	}
	code, _ := strconv.ParseInt(cs, 10, 32)
	at, _ := time.Parse(time.RFC3339Nano, l[labelExitAt])
	return exitFacts{code: int32(code), at: at, reason: l[labelExitReason]}, true
}

// exitReason is Kubernetes' reason for an exit.
func exitReason(code int32, oom bool) string {
	switch {
	case oom:
		return ReasonOOMKilled
	case code == 0:
		return ReasonCompleted
	}
	return ReasonError
}

// reap records the exit facts of c's stopped task as labels and deletes
// the task, or returns the facts recorded before. ok is false when the
// container has not exited.
func (r *Runtime) reap(ctx context.Context, c client.Container) (exitFacts, error) {
	unlock := r.reaping.lock(c.ID())
	defer unlock()
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		labels, err := c.Labels(ctx)
		if err != nil {
			return exitFacts{}, translate("labels of "+c.ID(), err)
		}
		f, _ := factsFromLabels(labels)
		return f, nil
	}
	if err != nil {
		return exitFacts{}, translate("task of "+c.ID(), err)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return exitFacts{}, translate("task status "+c.ID(), err)
	}
	if st.Status != client.Stopped {
		return exitFacts{}, fmt.Errorf("container %s has not exited (%s)", c.ID(), st.Status)
	}
	// The exit moment on the runtime's clock: containerd's wall-clock
	// exit time, moved by how long ago it was. With the real clock that
	// is ExitTime itself; with an injected one it stays consistent with
	// the start times stamped from that clock.
	at := st.ExitTime
	if !at.IsZero() {
		at = r.clock.Now().Add(-time.Since(st.ExitTime))
	}
	f := exitFacts{code: int32(st.ExitStatus), at: at}
	f.reason = exitReason(f.code, r.oomKilled(ctx, c))
	if _, err := c.SetLabels(ctx, map[string]string{
		labelExitCode:   strconv.Itoa(int(f.code)),
		labelExitAt:     f.at.UTC().Format(time.RFC3339Nano),
		labelExitReason: f.reason,
	}); err != nil {
		return exitFacts{}, translate("record exit of "+c.ID(), err)
	}
	dctx, cancel := settled(ctx) // the delete shuts the shim down: see StartContainer
	defer cancel()
	if _, err := task.Delete(dctx); err != nil && !errdefs.IsNotFound(err) {
		return exitFacts{}, translate("delete task "+c.ID(), err)
	}
	return f, nil
}

// oomKilled reports whether the kernel OOM-killed a process of c: a
// TaskOOM event seen, or the OOM-kill counter of its (still present)
// cgroup.
func (r *Runtime) oomKilled(ctx context.Context, c client.Container) bool {
	r.mu.Lock()
	seen := r.oomSeen[c.ID()]
	r.mu.Unlock()
	if seen {
		return true
	}
	spec, err := c.Spec(ctx)
	if err != nil || spec.Linux == nil || spec.Linux.CgroupsPath == "" {
		return false
	}
	n, err := r.cg.OOMKills(spec.Linux.CgroupsPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		r.log.Debug("read oom kills", "id", c.ID(), "err", err)
	}
	return err == nil && n > 0
}

// settleTimeout bounds a containerd call run on a context of its own
// (settled), as the kubelet bounds every runtime call by its
// --runtime-request-timeout (2 minutes).
const settleTimeout = 2 * time.Minute

// settled returns a context for calls that must not be cut off halfway
// (task create, start and delete, container create and delete): it keeps
// ctx's values (the containerd namespace) but not its cancellation, and
// ends after settleTimeout.
func settled(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}
