package containerd

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"

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
		st, err := r.containerStatus(ctx, c, info)
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
		sort.Slice(p.Containers, func(i, j int) bool {
			a, b := p.Containers[i], p.Containers[j]
			if a.Name != b.Name {
				return a.Name < b.Name
			}
			return a.RestartCount < b.RestartCount
		})
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

// containerStatus reads one container's state from its task, or from its
// recorded exit facts once the task is gone.
func (r *Runtime) containerStatus(ctx context.Context, c client.Container, info containers.Container) (runtime.ContainerStatus, error) {
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
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
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
	if err != nil {
		return st, translate("task of "+c.ID(), err)
	}
	ts, err := task.Status(ctx)
	if err != nil {
		return st, translate("task status "+c.ID(), err)
	}
	st.PID = task.Pid()
	switch ts.Status {
	case client.Created:
		st.State = runtime.StateCreated
	case client.Running, client.Paused, client.Pausing:
		st.State = runtime.StateRunning
	case client.Stopped:
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
