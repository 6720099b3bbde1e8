package kubelet

import (
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// containerStart is one container syncPod should run.
type containerStart struct {
	spec    *api.Container
	init    bool
	restart int // restart count of the instance to create
	// existingID: an instance was created but never started; start it.
	existingID string
	// exited is the instance being replaced after it exited; its finish
	// time drives the crash-loop back-off. Nil for first starts and for
	// replacements of a changed spec.
	exited *runtime.ContainerStatus
}

// containerKill is a container to stop before starting its replacement.
type containerKill struct {
	id, name, reason string
}

// podActions is what syncPod must do to bring a pod's runtime state to
// its spec: the kubelet's computePodActions, leaner.
type podActions struct {
	createSandbox bool
	kill          []containerKill
	// start holds at most one init container (init containers run one at
	// a time, in order), else the app containers to start.
	start []containerStart
}

// shouldRestart applies a restart policy to an exited container.
func shouldRestart(policy api.RestartPolicy, exitCode int32) bool {
	switch policy {
	case api.RestartPolicyNever:
		return false
	case api.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// computePodActions decides, from pod's spec and the runtime's view rs
// (nil when the runtime holds nothing of the pod), what to do next. It is
// a pure function; back-off is applied when the actions are carried out.
//
//   - No sandbox: create it; containers left running without one are
//     killed and replaced.
//   - Init containers run one at a time in order, each to exit 0 before
//     the next starts; a failed one restarts unless restartPolicy is
//     Never (the pod then fails). Once any app container exists the init
//     phase is over for good.
//   - App containers start when missing, restart per restartPolicy after
//     they exit, and are replaced when their spec hash changed.
func computePodActions(pod *api.Pod, rs *runtime.PodStatus) podActions {
	var acts podActions
	pc := indexContainers(rs)
	if rs == nil || rs.Sandbox == nil {
		acts.createSandbox = true
		if rs != nil {
			for _, c := range rs.Containers {
				if c.State == runtime.StateRunning {
					acts.kill = append(acts.kill, containerKill{id: c.ID, name: c.Name, reason: "sandbox is gone"})
				}
			}
		}
	}
	// replace kills the running instance cur and restarts it anew.
	replace := func(c *api.Container, init bool, cur *runtime.ContainerStatus, reason string) containerStart {
		acts.kill = append(acts.kill, containerKill{id: cur.ID, name: c.Name, reason: reason})
		return containerStart{spec: c, init: init, restart: cur.RestartCount + 1}
	}
	// next returns the start for container c given its newest instance,
	// and whether c is done (nothing to start, not running).
	next := func(c *api.Container, init bool) (st *containerStart, running bool) {
		cur := pc.latest(init, c.Name)
		killed := acts.createSandbox && cur != nil && cur.State == runtime.StateRunning
		switch {
		case cur == nil:
			return &containerStart{spec: c, init: init}, false
		case cur.State == runtime.StateCreated:
			return &containerStart{spec: c, init: init, restart: cur.RestartCount, existingID: cur.ID}, false
		case cur.State == runtime.StateRunning && killed:
			return &containerStart{spec: c, init: init, restart: cur.RestartCount + 1}, false
		case cur.State == runtime.StateRunning && cur.Hash != containerHash(c):
			s := replace(c, init, cur, "spec changed")
			return &s, false
		case cur.State == runtime.StateRunning:
			return nil, true
		case cur.State == runtime.StateExited:
			policy := pod.Spec.RestartPolicy
			if init && policy == api.RestartPolicyAlways {
				policy = api.RestartPolicyOnFailure // init containers never rerun after success
			}
			if !shouldRestart(policy, cur.ExitCode) {
				return nil, false
			}
			return &containerStart{spec: c, init: init, restart: cur.RestartCount + 1, exited: cur}, false
		default: // unknown: stop what may be left and start afresh
			s := replace(c, init, cur, "state unknown")
			return &s, false
		}
	}

	appStarted := false
	for i := range pod.Spec.Containers {
		if pc.latest(false, pod.Spec.Containers[i].Name) != nil {
			appStarted = true
		}
	}
	if !appStarted {
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			st, running := next(c, true)
			if running {
				return acts // wait for it to exit
			}
			if st != nil {
				acts.start = []containerStart{*st}
				return acts
			}
			if cur := pc.latest(true, c.Name); cur == nil || cur.ExitCode != 0 {
				return acts // failed for good (restartPolicy Never)
			}
		}
	}
	for i := range pod.Spec.Containers {
		if st, _ := next(&pod.Spec.Containers[i], false); st != nil {
			acts.start = append(acts.start, *st)
		}
	}
	return acts
}
