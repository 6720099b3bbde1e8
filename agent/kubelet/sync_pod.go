package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
)

// ErrNotFound: the pod, container or log asked for does not exist.
var ErrNotFound = errors.New("not found")

// syncPod brings a pod that should run towards its spec: report status,
// prepare volumes, create the sandbox, start the next init container or
// the app containers (with back-off), then report status again. It
// returns terminal once the pod has finished.
func (k *Kubelet) syncPod(ctx context.Context, pod *api.Pod) (syncResult, error) {
	rs, err := k.pleg.fresh(ctx, pod.UID)
	if err != nil {
		return syncResult{}, err
	}
	k.updateProber(pod, rs)
	if killed, err := k.killUnhealthy(ctx, pod, rs); err != nil {
		return syncResult{}, err
	} else if killed {
		if rs, err = k.pleg.fresh(ctx, pod.UID); err != nil {
			return syncResult{}, err
		}
		k.updateProber(pod, rs)
	}
	st := k.generate(pod, rs, false)
	k.sendStatus(pod, st)
	if st.Phase == api.PodSucceeded || st.Phase == api.PodFailed {
		return syncResult{terminal: true}, nil
	}
	if err := os.MkdirAll(volumes.PodDir(k.cfg.PodsDir, pod), 0o750); err != nil {
		return syncResult{}, fmt.Errorf("create pod dir: %w", err)
	}
	paths, err := k.volumes.Prepare(ctx, pod)
	if err != nil {
		return syncResult{}, fmt.Errorf("prepare volumes: %w", err)
	}

	acts := computePodActions(pod, rs)
	acted := false
	var sandbox runtime.Sandbox
	newSandbox := acts.createSandbox
	if !newSandbox && !sandboxComplete(pod, *rs.Sandbox) {
		// An agent killed inside CreateSandbox left a record without a
		// cgroup or network namespace: containers started in it would
		// run outside the pod's cgroup, or in a namespace of their own
		// with no network. CreateSandbox finishes it; its network is set
		// up anew.
		k.log.Info("completing a sandbox whose creation was cut short", "pod", podRef(pod))
		newSandbox = true
	}
	if newSandbox {
		acted = true
		if sandbox, err = k.rt.CreateSandbox(ctx, sandboxConfig(pod)); err != nil {
			return syncResult{}, fmt.Errorf("create sandbox: %w", err)
		}
	} else {
		sandbox = *rs.Sandbox
	}
	if err := k.setUpNetwork(ctx, pod, sandbox, newSandbox); err != nil {
		return syncResult{}, err
	}
	grace := gracePeriod(pod, nil)
	for _, kc := range acts.kill {
		acted = true
		k.log.Info("stopping container", "pod", podRef(pod), "container", kc.name, "reason", kc.reason)
		k.event(pod, api.EventTypeNormal, "Killing", "Stopping container %s: %s", kc.name, kc.reason)
		if err := k.rt.StopContainer(ctx, kc.id, grace); err != nil {
			return syncResult{}, fmt.Errorf("stop container %s: %w", kc.name, err)
		}
	}
	var res syncResult
	var errs []error
	for _, s := range acts.start {
		acted = true
		wait, err := k.startContainer(ctx, pod, sandbox, paths, s)
		if wait > 0 && (res.requeueAfter == 0 || wait < res.requeueAfter) {
			res.requeueAfter = wait
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", s.spec.Name, err))
		}
	}
	if acted {
		if rs, err = k.pleg.fresh(ctx, pod.UID); err == nil {
			k.updateProber(pod, rs)
			k.sendStatus(pod, k.generate(pod, rs, false))
		}
	}
	return res, errors.Join(errs...)
}

// startContainer creates and starts one container, unless it must wait:
// crash-loop back-off, image pull back-off. wait is how long until it may
// be tried again (0: at the normal retry).
func (k *Kubelet) startContainer(ctx context.Context, pod *api.Pod, sb runtime.Sandbox, paths volumes.Paths, s containerStart) (wait time.Duration, err error) {
	c := s.spec
	key := containerKey(s.init, c.Name)
	now := k.clock.Now()
	if s.existingID != "" {
		if err := k.rt.StartContainer(ctx, s.existingID); err != nil {
			k.setReason(pod.UID, key, ReasonRunContainerError, err.Error())
			return 0, err
		}
		k.clearReason(pod.UID, key)
		return 0, nil
	}
	if s.exited != nil {
		bk := pod.UID + "/" + key
		if rem := k.crash.remainingSince(bk, s.exited.FinishedAt, now); rem > 0 {
			k.event(pod, api.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, pod.Name)
			k.setReason(pod.UID, key, ReasonCrashLoopBackOff, fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
				k.crash.delay(bk), c.Name, pod.Name, pod.Namespace, pod.UID))
			return rem, nil
		}
		k.crash.next(bk, s.exited.FinishedAt, now)
	}
	img, wait, err := k.ensureImage(ctx, pod, c, key)
	if err != nil || wait > 0 {
		return wait, err
	}
	cfg, err := k.containerConfig(ctx, pod, c, s, sb, paths, img)
	if err != nil {
		k.setReason(pod.UID, key, ReasonCreateContainerConfigError, err.Error())
		k.event(pod, api.EventTypeWarning, "Failed", "Error: %v", err)
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o750); err != nil {
		return 0, fmt.Errorf("create log dir: %w", err)
	}
	id, err := k.rt.CreateContainer(ctx, cfg)
	if errors.Is(err, runtime.ErrAlreadyExists) {
		id, err = runtime.ContainerID(pod.UID, c.Name, s.restart), nil
	}
	if err != nil {
		k.setReason(pod.UID, key, ReasonCreateContainerError, err.Error())
		k.event(pod, api.EventTypeWarning, "Failed", "Error: %v", err)
		return 0, err
	}
	k.event(pod, api.EventTypeNormal, "Created", "Created container %s", c.Name)
	if err := k.rt.StartContainer(ctx, id); err != nil {
		k.setReason(pod.UID, key, ReasonRunContainerError, err.Error())
		k.event(pod, api.EventTypeWarning, "Failed", "Error: %v", err)
		return 0, err
	}
	k.event(pod, api.EventTypeNormal, "Started", "Started container %s", c.Name)
	k.clearReason(pod.UID, key)
	k.pruneInstances(ctx, pod, c.Name, s.init, s.restart)
	return 0, nil
}

// ensureImage pulls c's image per its policy with the pod's pull secrets.
// A failure is ErrImagePull, and the next tries wait with
// ImagePullBackOff: wait > 0 with a nil error means "in back-off".
func (k *Kubelet) ensureImage(ctx context.Context, pod *api.Pod, c *api.Container, key string) (runtime.Image, time.Duration, error) {
	bk := pod.UID + "/" + c.Image
	now := k.clock.Now()
	if rem := k.pulls.remainingSinceUpdate(bk, now); rem > 0 {
		k.setReason(pod.UID, key, ReasonImagePullBackOff, fmt.Sprintf("Back-off pulling image %q", c.Image))
		k.event(pod, api.EventTypeNormal, "BackOff", "Back-off pulling image %q", c.Image)
		return runtime.Image{}, rem, nil
	}
	auth, warnings := pullAuth(ctx, k.cfg.Objects, pod)
	for _, w := range warnings {
		k.log.Warn("image pull secret unusable", "pod", podRef(pod), "detail", w)
	}
	img, err := k.rt.EnsureImage(ctx, c.Image, pullPolicy(c), auth)
	switch {
	case errors.Is(err, runtime.ErrImageNeverPull):
		k.setReason(pod.UID, key, ReasonErrImageNeverPull, fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image))
		return runtime.Image{}, 0, err
	case err != nil:
		k.pulls.next(bk, now, now)
		k.setReason(pod.UID, key, ReasonErrImagePull, err.Error())
		k.event(pod, api.EventTypeWarning, "Failed", "Failed to pull image %q: %v", c.Image, err)
		// come back at the next sync tick to show ImagePullBackOff
		return runtime.Image{}, k.cfg.SyncPeriod, err
	}
	k.pulls.reset(bk)
	return img, 0, nil
}

// containerConfig resolves everything the runtime needs for c.
func (k *Kubelet) containerConfig(ctx context.Context, pod *api.Pod, c *api.Container, s containerStart, sb runtime.Sandbox, paths volumes.Paths, img runtime.Image) (runtime.ContainerConfig, error) {
	env, err := makeEnv(ctx, envInput{
		pod: pod, podIP: k.podIP(pod), hostIP: k.cfg.HostIP(),
		objects: k.cfg.Objects, allocatable: k.cfg.Allocatable,
	}, c)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	mounts, err := volumes.Mounts(pod, c, paths)
	if err != nil {
		return runtime.ContainerConfig{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if mounts, err = k.etcMounts(pod, mounts); err != nil {
		return runtime.ContainerConfig{}, err
	}
	vals := make(map[string]string, len(env))
	cfg := runtime.ContainerConfig{
		PodUID: pod.UID, PodName: pod.Name, Namespace: pod.Namespace,
		Name: c.Name, RestartCount: s.restart, Init: s.init,
		Hash:       containerHash(c),
		Image:      img.Ref,
		WorkingDir: c.WorkingDir,
		Mounts:     mounts,
		LogPath:    logPath(k.cfg.PodsDir, pod, c.Name, s.restart),
		Sandbox:    sb,
	}
	if cfg.Image == "" {
		cfg.Image = c.Image
	}
	for _, e := range env {
		vals[e.name] = e.value
		cfg.Env = append(cfg.Env, e.name+"="+e.value)
	}
	lookup := func(n string) (string, bool) { v, ok := vals[n]; return v, ok }
	for _, a := range c.Command {
		cfg.Command = append(cfg.Command, expand(a, lookup))
	}
	for _, a := range c.Args {
		cfg.Args = append(cfg.Args, expand(a, lookup))
	}
	if !pod.Spec.HostNetwork {
		cfg.Hostname = pod.Spec.Hostname
		if cfg.Hostname == "" {
			cfg.Hostname = pod.Name
		}
	}
	cfg.CPURequestMilli, cfg.CPULimitMilli, cfg.MemoryLimit = containerResources(c)
	if err := applySecurity(&cfg, pod, c); err != nil {
		return runtime.ContainerConfig{}, err
	}
	return cfg, nil
}

// pruneInstances removes exited instances of a container older than the
// previous one, and their logs: the newest and the previous instance stay
// (lastState and "logs --previous").
func (k *Kubelet) pruneInstances(ctx context.Context, pod *api.Pod, name string, init bool, restart int) {
	rs := k.pleg.get(pod.UID)
	if rs == nil {
		return
	}
	for _, c := range rs.Containers {
		if c.Name != name || c.Init != init || c.RestartCount >= restart-1 || c.State == runtime.StateRunning {
			continue
		}
		if err := k.rt.RemoveContainer(ctx, c.ID); err != nil {
			k.log.Warn("remove old container", "pod", podRef(pod), "container", name, "err", err)
			continue
		}
		if err := os.Remove(logPath(k.cfg.PodsDir, pod, name, c.RestartCount)); err != nil && !errors.Is(err, os.ErrNotExist) {
			k.log.Warn("remove old container log", "pod", podRef(pod), "container", name, "err", err)
		}
	}
}

// podIP is pod's IP: the host's for hostNetwork pods.
func (k *Kubelet) podIP(pod *api.Pod) string {
	if pod.Spec.HostNetwork {
		return k.cfg.HostIP()
	}
	return k.cfg.PodIP(pod.UID)
}

// generate builds pod's status from rs and what the agent recorded.
func (k *Kubelet) generate(pod *api.Pod, rs *runtime.PodStatus, stopped bool) api.PodStatus {
	k.mu.Lock()
	old, ok := k.sent[pod.UID]
	reasons := make(map[string]waitingReason, len(k.reasons[pod.UID]))
	for key, r := range k.reasons[pod.UID] {
		reasons[key] = r
	}
	k.mu.Unlock()
	if !ok {
		old = pod.Status // restored or adopted: keep startTime and transitions
	}
	in := statusInput{
		pod: pod, runtime: rs, reasons: reasons, old: old, now: k.clock.Now(),
		hostIP: k.cfg.HostIP(), podIP: k.podIP(pod), stopped: stopped,
	}
	if pr := k.cfg.Prober; pr != nil {
		in.probed = func(name, id string) (bool, bool) {
			return pr.Ready(pod.UID, name, id), pr.Started(pod.UID, name, id)
		}
	}
	return generateStatus(in)
}

// sendStatus hands st to the status manager when it changed.
func (k *Kubelet) sendStatus(pod *api.Pod, st api.PodStatus) {
	k.mu.Lock()
	old, ok := k.sent[pod.UID]
	if ok && reflect.DeepEqual(old, st) {
		k.mu.Unlock()
		return
	}
	k.sent[pod.UID] = st
	k.mu.Unlock()
	k.cfg.Status.SetPodStatus(pod, st)
}

func (k *Kubelet) setReason(uid, key, reason, msg string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := k.reasons[uid]
	if m == nil {
		m = map[string]waitingReason{}
		k.reasons[uid] = m
	}
	m[key] = waitingReason{Reason: reason, Message: msg}
}

func (k *Kubelet) clearReason(uid, key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.reasons[uid], key)
}

func podRef(pod *api.Pod) string { return pod.Namespace + "/" + pod.Name }

// sandboxComplete reports whether sb has everything CreateSandbox makes:
// the pod's cgroup and, unless hostNetwork, its network namespace.
func sandboxComplete(pod *api.Pod, sb runtime.Sandbox) bool {
	return sb.CgroupParent != "" && (pod.Spec.HostNetwork || sb.NetNSPath != "")
}
