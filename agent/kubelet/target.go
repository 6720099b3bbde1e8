package kubelet

import (
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/agent/runtime"
)

// ErrNotRunning means a pod or container exists but does not run, so
// nothing can be executed in it or forwarded to it.
var ErrNotRunning = errors.New("not running")

// Target is where a stream request (exec, attach, port-forward) goes:
// a pod the agent runs and, for exec and attach, its running container.
type Target struct {
	PodUID string
	// ContainerID is the running instance of the container asked for;
	// "" when no container was asked for.
	ContainerID string
	// LogPath is that instance's log file.
	LogPath string
	// NetNSPath is the pod's network namespace; "" for hostNetwork pods.
	NetNSPath string
}

// Target finds pod ns/name and, unless container is "", the running
// instance of that container. Errors wrap ErrNotFound (no such pod or
// container) or ErrNotRunning. Safe for concurrent use.
func (k *Kubelet) Target(ns, name, container string) (Target, error) {
	uid := ""
	k.mu.Lock()
	for _, p := range k.pods {
		if p.Namespace == ns && p.Name == name {
			uid = p.UID
		}
	}
	k.mu.Unlock()
	if uid == "" {
		return Target{}, fmt.Errorf("pod %s/%s does not run on this node: %w", ns, name, ErrNotFound)
	}
	rs := k.pleg.get(uid)
	if rs == nil || rs.Sandbox == nil {
		return Target{}, fmt.Errorf("pod %s/%s has no sandbox yet: %w", ns, name, ErrNotRunning)
	}
	t := Target{PodUID: uid, NetNSPath: rs.Sandbox.NetNSPath}
	if container == "" {
		return t, nil
	}
	known, newest := false, -1
	for _, c := range rs.Containers {
		if c.Name != container {
			continue
		}
		known = true
		if c.State == runtime.StateRunning && c.RestartCount > newest {
			newest, t.ContainerID, t.LogPath = c.RestartCount, c.ID, c.LogPath
		}
	}
	switch {
	case !known && !k.hasContainer(uid, container):
		return Target{}, fmt.Errorf("container %s is not valid for pod %s/%s: %w", container, ns, name, ErrNotFound)
	case t.ContainerID == "":
		return Target{}, fmt.Errorf("container %s of pod %s/%s is not running: %w", container, ns, name, ErrNotRunning)
	}
	return t, nil
}

// hasContainer reports whether the desired pod uid declares container.
func (k *Kubelet) hasContainer(uid, container string) bool {
	p := k.desired(uid)
	if p == nil {
		return false
	}
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return true
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.Name == container {
			return true
		}
	}
	return false
}
