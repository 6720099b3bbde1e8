package containerd

import (
	"context"

	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/typeurl/v2"

	"github.com/skiffhq/skiff/agent/runtime"
)

// eventBuffer is how many events Events holds for a slow reader before it
// drops them.
const eventBuffer = 256

// Events streams ContainerStarted, ContainerDied and ContainerOOM for the
// namespace's containers until ctx ends or the subscription breaks; then
// the channel is closed (the agent resubscribes and relists). Events are
// dropped when the reader falls behind.
func (r *Runtime) Events(ctx context.Context) (<-chan runtime.Event, error) {
	ctx = r.nsctx(ctx)
	var filters []string
	for _, t := range []string{"/tasks/start", "/tasks/exit", "/tasks/oom"} {
		filters = append(filters, `namespace==`+r.ns+`,topic=="`+t+`"`)
	}
	envs, errs := r.client.Subscribe(ctx, filters...)
	out := make(chan runtime.Event, eventBuffer)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-errs:
				if err != nil && ctx.Err() == nil {
					r.log.Warn("containerd event stream ended", "err", err)
				}
				return
			case env := <-envs:
				if env == nil || env.Event == nil {
					continue
				}
				v, err := typeurl.UnmarshalAny(env.Event)
				if err != nil {
					r.log.Debug("undecodable containerd event", "topic", env.Topic, "err", err)
					continue
				}
				ev, ok := r.mapEvent(ctx, v)
				if !ok {
					continue
				}
				select {
				case out <- ev:
				default:
					r.log.Debug("dropping runtime event: reader is slow", "type", ev.Type, "container", ev.ContainerID)
				}
			}
		}
	}()
	return out, nil
}

func (r *Runtime) mapEvent(ctx context.Context, v any) (runtime.Event, bool) {
	var ev runtime.Event
	switch e := v.(type) {
	case *apievents.TaskStart:
		ev = runtime.Event{Type: runtime.ContainerStarted, ContainerID: e.ContainerID}
	case *apievents.TaskExit:
		if e.ID != "" && e.ID != e.ContainerID {
			return ev, false // an exec'd process, not the container
		}
		ev = runtime.Event{Type: runtime.ContainerDied, ContainerID: e.ContainerID}
	case *apievents.TaskOOM:
		r.mu.Lock()
		r.oomSeen[e.ContainerID] = true
		r.mu.Unlock()
		ev = runtime.Event{Type: runtime.ContainerOOM, ContainerID: e.ContainerID}
	default:
		return ev, false
	}
	uid, ok := r.podUID(ctx, ev.ContainerID)
	if !ok {
		return ev, false // not one of skiff's containers
	}
	ev.PodUID = uid
	return ev, true
}

// podUID resolves a container to its pod from the cache, else from its
// labels.
func (r *Runtime) podUID(ctx context.Context, id string) (string, bool) {
	r.mu.Lock()
	uid, ok := r.podOf[id]
	r.mu.Unlock()
	if ok {
		return uid, true
	}
	c, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return "", false
	}
	labels, err := c.Labels(ctx)
	if err != nil || labels[runtime.LabelPodUID] == "" {
		return "", false
	}
	r.rememberPod(id, labels[runtime.LabelPodUID])
	return labels[runtime.LabelPodUID], true
}
