package fake

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
)

// CreateContainer implements runtime.Runtime. The pod's sandbox must
// exist; the ID is runtime.ContainerID of the config.
func (r *Runtime) CreateContainer(ctx context.Context, cfg runtime.ContainerConfig) (string, error) {
	id := runtime.ContainerID(cfg.PodUID, cfg.Name, cfg.RestartCount)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodCreateContainer, Arg: id}); err != nil {
		return "", err
	}
	if cfg.PodUID == "" || cfg.Name == "" || cfg.Image == "" {
		return "", fmt.Errorf("create container %q: %w: pod uid, name and image are required", id, runtime.ErrInvalidConfig)
	}
	if _, ok := r.sandboxes[cfg.PodUID]; !ok {
		return "", fmt.Errorf("create container %s: sandbox of pod %s: %w", id, cfg.PodUID, runtime.ErrNotFound)
	}
	if _, ok := r.containers[id]; ok {
		return "", fmt.Errorf("create container %s: %w", id, runtime.ErrAlreadyExists)
	}
	img := r.images[cfg.Image]
	r.containers[id] = &container{
		cfg:        cfg,
		ignoreTerm: r.ignoreTerm[cfg.Name],
		exited:     make(chan struct{}),
		status: runtime.ContainerStatus{
			ID:           id,
			PodUID:       cfg.PodUID,
			Name:         cfg.Name,
			RestartCount: cfg.RestartCount,
			Init:         cfg.Init,
			Hash:         cfg.Hash,
			Image:        cfg.Image,
			ImageID:      img.ID,
			State:        runtime.StateCreated,
			CreatedAt:    r.clock.Now(),
			LogPath:      cfg.LogPath,
		},
	}
	return id, nil
}

// StartContainer implements runtime.Runtime.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodStartContainer, Arg: id}); err != nil {
		return err
	}
	c, ok := r.containers[id]
	if !ok {
		return fmt.Errorf("start container %s: %w", id, runtime.ErrNotFound)
	}
	if c.status.State != runtime.StateCreated {
		return fmt.Errorf("start container %s: container is %s", id, c.status.State)
	}
	if err := r.startErrors[c.status.Name]; err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	c.status.State = runtime.StateRunning
	c.status.StartedAt = r.clock.Now()
	c.status.PID = uint32(1000 + len(r.calls))
	r.emitLocked(runtime.ContainerStarted, c)
	return nil
}

// StopContainer implements runtime.Runtime. A container exits at once
// with code 143 on the stop signal, unless IgnoreSIGTERM named it: then
// it is killed (137) when grace has passed on the clock.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	r.mu.Lock()
	if err := r.recordLocked(Call{Method: MethodStopContainer, Arg: id, Grace: grace}); err != nil {
		r.mu.Unlock()
		return err
	}
	c, ok := r.containers[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("stop container %s: %w", id, runtime.ErrNotFound)
	}
	if c.status.State != runtime.StateRunning {
		r.mu.Unlock()
		return nil
	}
	if !c.ignoreTerm {
		r.exitLocked(c, 143, "Error")
		r.mu.Unlock()
		return nil
	}
	exited := c.exited
	r.mu.Unlock()
	t := r.clock.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop container %s: %w", id, ctx.Err())
	case <-t.C():
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.status.State == runtime.StateRunning {
		r.exitLocked(c, 137, "Error")
	}
	return nil
}

// RemoveContainer implements runtime.Runtime; a running container is an
// error, a missing one is not.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodRemoveContainer, Arg: id}); err != nil {
		return err
	}
	c, ok := r.containers[id]
	if !ok {
		return nil
	}
	if c.status.State == runtime.StateRunning {
		return fmt.Errorf("remove container %s: container is running", id)
	}
	delete(r.containers, id)
	return nil
}

// ListPods implements runtime.Runtime. Pods are sorted by UID and their
// containers by name and restart count.
func (r *Runtime) ListPods(ctx context.Context) ([]runtime.PodStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodListPods}); err != nil {
		return nil, err
	}
	return r.listLocked(""), nil
}

// PodStatus implements runtime.Runtime.
func (r *Runtime) PodStatus(ctx context.Context, uid string) (*runtime.PodStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodPodStatus, Arg: uid}); err != nil {
		return nil, err
	}
	if l := r.listLocked(uid); len(l) == 1 {
		return &l[0], nil
	}
	return nil, nil
}

// listLocked lists every pod, or only pod only when it is not "".
func (r *Runtime) listLocked(only string) []runtime.PodStatus {
	pods := map[string]*runtime.PodStatus{}
	get := func(uid, name, ns string) *runtime.PodStatus {
		p := pods[uid]
		if p == nil {
			p = &runtime.PodStatus{UID: uid, Name: name, Namespace: ns}
			pods[uid] = p
		}
		return p
	}
	for uid, cfg := range r.sandboxes {
		if only != "" && uid != only {
			continue
		}
		sb := sandboxOf(cfg)
		if r.cutShort[uid] {
			sb = runtime.Sandbox{PodUID: uid}
		}
		get(uid, cfg.PodName, cfg.Namespace).Sandbox = &sb
	}
	for _, c := range r.containers {
		if only != "" && c.status.PodUID != only {
			continue
		}
		p := get(c.status.PodUID, c.cfg.PodName, c.cfg.Namespace)
		p.Containers = append(p.Containers, c.status)
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
	return out
}

// Events implements runtime.Runtime. Every caller shares one channel; it
// is never closed.
func (r *Runtime) Events(ctx context.Context) (<-chan runtime.Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked(Call{Method: MethodEvents}); err != nil {
		return nil, err
	}
	return r.events, nil
}

// ContainerIDs returns the IDs of pod uid's containers named name, oldest
// restart first.
func (r *Runtime) ContainerIDs(uid, name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, c := range r.containers {
		if c.status.PodUID == uid && c.status.Name == name {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		return r.containers[ids[i]].status.RestartCount < r.containers[ids[j]].status.RestartCount
	})
	return ids
}
