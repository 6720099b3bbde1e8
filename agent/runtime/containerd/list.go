package containerd

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"

	"github.com/skiffhq/skiff/agent/runtime"
)

// ListPods returns every pod with containers or a sandbox, sorted by UID,
// each pod's containers sorted by name and restart count. Exited tasks
// found on the way are reaped (their exit facts recorded, the task
// deleted).
func (r *Runtime) ListPods(ctx context.Context) ([]runtime.PodStatus, error) {
	ctx = r.nsctx(ctx)
	sbs, recs, err := r.sandboxes()
	if err != nil {
		return nil, err
	}
	cs, err := r.client.Containers(ctx, `labels."`+runtime.LabelPodUID+`"`)
	if err != nil {
		return nil, translate("list containers", err)
	}
	// One listing of every task, after the containers' (a task missing
	// from it is gone, not yet to come), instead of two calls per
	// container: a relist costs two round trips however many pods run.
	tl, err := r.client.TaskService().List(ctx, &tasks.ListTasksRequest{})
	if err != nil {
		return nil, translate("list tasks", errgrpc.ToNative(err))
	}
	procs := make(map[string]*tasktypes.Process, len(tl.Tasks))
	for _, t := range tl.Tasks {
		procs[t.ID] = t
	}
	pods := map[string]*runtime.PodStatus{}
	get := func(uid string) *runtime.PodStatus {
		if pods[uid] == nil {
			pods[uid] = &runtime.PodStatus{UID: uid}
		}
		return pods[uid]
	}
	for _, c := range cs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if errdefs.IsNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, translate("container "+c.ID(), err)
		}
		st, err := r.containerStatus(ctx, c, info, procs[c.ID()])
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p := get(st.PodUID)
		p.Name, p.Namespace = info.Labels[runtime.LabelPodName], info.Labels[runtime.LabelPodNamespace]
		p.Containers = append(p.Containers, st)
		r.rememberPod(c.ID(), st.PodUID)
	}
	for uid, sb := range sbs {
		p := get(uid)
		s := *sb
		p.Sandbox = &s
		if rec, ok := recs[uid]; ok {
			p.Name, p.Namespace = rec.Name, rec.Namespace
		}
	}
	out := make([]runtime.PodStatus, 0, len(pods))
	for _, p := range pods {
		sortContainers(p.Containers)
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

// PodStatus implements runtime.Runtime: the pod's sandbox (record, netns,
// cgroup) and its containers, each task read on its own.
func (r *Runtime) PodStatus(ctx context.Context, uid string) (*runtime.PodStatus, error) {
	if err := validPodUID(uid); err != nil {
		return nil, err
	}
	ctx = r.nsctx(ctx)
	sb, rec, err := r.sandboxOf(uid)
	if err != nil {
		return nil, err
	}
	cs, err := r.client.Containers(ctx, `labels."`+runtime.LabelPodUID+`"==`+strconv.Quote(uid))
	if err != nil {
		return nil, translate("list containers of pod "+uid, err)
	}
	if sb == nil && len(cs) == 0 {
		return nil, nil
	}
	p := &runtime.PodStatus{UID: uid, Sandbox: sb}
	if rec != nil {
		p.Name, p.Namespace = rec.Name, rec.Namespace
	}
	for _, c := range cs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if errdefs.IsNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, translate("container "+c.ID(), err)
		}
		var proc *tasktypes.Process
		resp, err := r.client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: c.ID()})
		switch err := translate("task of "+c.ID(), errgrpc.ToNative(err)); {
		case errdefs.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			proc = resp.Process
		}
		st, err := r.containerStatus(ctx, c, info, proc)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p.Name, p.Namespace = info.Labels[runtime.LabelPodName], info.Labels[runtime.LabelPodNamespace]
		p.Containers = append(p.Containers, st)
		r.rememberPod(c.ID(), st.PodUID)
	}
	sortContainers(p.Containers)
	return p, nil
}

func sortContainers(cs []runtime.ContainerStatus) {
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.RestartCount < b.RestartCount
	})
}

// containerStatus reads one container's state from its task's process as
// listed (nil: no task), or from its recorded exit facts once the task is
// gone.
func (r *Runtime) containerStatus(ctx context.Context, c client.Container, info containers.Container, proc *tasktypes.Process) (runtime.ContainerStatus, error) {
	l := info.Labels
	restart, _ := strconv.Atoi(l[runtime.LabelRestartCount])
	st := runtime.ContainerStatus{
		ID:           c.ID(),
		PodUID:       l[runtime.LabelPodUID],
		Name:         l[runtime.LabelContainerName],
		RestartCount: restart,
		Init:         l[runtime.LabelInit] == "true",
		Hash:         l[runtime.LabelHash],
		Image:        info.Image,
		ImageID:      l[labelImageID],
		CreatedAt:    info.CreatedAt,
		LogPath:      l[labelLogPath],
	}
	st.StartedAt, _ = time.Parse(time.RFC3339Nano, l[labelStartedAt])
	if f, ok := factsFromLabels(l); ok {
		st.State, st.ExitCode, st.FinishedAt, st.Reason = runtime.StateExited, f.code, f.at, f.reason
		return st, nil
	}
	if proc == nil {
		if st.StartedAt.IsZero() {
			st.State = runtime.StateCreated
			return st, nil
		}
		// Started, but its task is gone with no exit recorded: the host
		// restarted, or the task was deleted behind skiff's back.
		st.State, st.ExitCode, st.Reason = runtime.StateExited, 255, ReasonError
		st.Message = "the container's task is gone and its exit was not recorded (host restart?)"
		return st, nil
	}
	st.PID = proc.Pid
	switch proc.Status {
	case tasktypes.Status_CREATED:
		st.State = runtime.StateCreated
	case tasktypes.Status_RUNNING, tasktypes.Status_PAUSED, tasktypes.Status_PAUSING:
		st.State = runtime.StateRunning
	case tasktypes.Status_STOPPED:
		f, err := r.reap(ctx, c)
		if err != nil {
			return st, err
		}
		st.State, st.ExitCode, st.FinishedAt, st.Reason, st.PID = runtime.StateExited, f.code, f.at, f.reason, 0
	default:
		st.State = runtime.StateUnknown
	}
	return st, nil
}
