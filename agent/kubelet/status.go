package kubelet

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
)

// Waiting reasons, as the kubelet reports them.
const (
	ReasonContainerCreating          = "ContainerCreating"
	ReasonPodInitializing            = "PodInitializing"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	ReasonErrImagePull               = "ErrImagePull"
	ReasonImagePullBackOff           = "ImagePullBackOff"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
)

// containerIDPrefix makes runtime IDs into status containerIDs.
const containerIDPrefix = "containerd://"

// waitingReason is why a container is not running, recorded by syncPod.
type waitingReason struct {
	Reason, Message string
}

// podContainers indexes a runtime pod's containers by (init, name).
type podContainers struct {
	byName map[string][]runtime.ContainerStatus // newest restart first
}

func indexContainers(rs *runtime.PodStatus) podContainers {
	pc := podContainers{byName: map[string][]runtime.ContainerStatus{}}
	if rs == nil {
		return pc
	}
	for _, c := range rs.Containers {
		key := containerKey(c.Init, c.Name)
		pc.byName[key] = append(pc.byName[key], c)
	}
	for _, list := range pc.byName {
		sort.Slice(list, func(i, j int) bool { return list[i].RestartCount > list[j].RestartCount })
	}
	return pc
}

func containerKey(init bool, name string) string {
	if init {
		return "init/" + name
	}
	return "app/" + name
}

// latest is the newest instance of a container, nil if none.
func (pc podContainers) latest(init bool, name string) *runtime.ContainerStatus {
	if l := pc.byName[containerKey(init, name)]; len(l) > 0 {
		return &l[0]
	}
	return nil
}

// previous is the instance before the newest, nil if none.
func (pc podContainers) previous(init bool, name string) *runtime.ContainerStatus {
	if l := pc.byName[containerKey(init, name)]; len(l) > 1 {
		return &l[1]
	}
	return nil
}

// statusInput is everything generateStatus reads.
type statusInput struct {
	pod     *api.Pod
	runtime *runtime.PodStatus
	reasons map[string]waitingReason // by containerKey
	old     api.PodStatus
	now     time.Time
	hostIP  string
	podIP   string
	// stopped: the pod was killed; a phase that would go on becomes
	// Failed (or Succeeded when every container exited 0).
	stopped bool
	// probed says whether a running app container instance is ready and
	// started, by its probes; nil: ready and started once running.
	probed func(name, id string) (ready, started bool)
}

// generateStatus builds the API status of a pod from the runtime's view,
// as the kubelet's generateAPIPodStatus does. It is a pure function.
func generateStatus(in statusInput) api.PodStatus {
	pod := in.pod
	pc := indexContainers(in.runtime)
	st := api.PodStatus{
		QOSClass:          api.QOSClass(pod),
		HostIP:            in.hostIP,
		NominatedNodeName: in.old.NominatedNodeName,
		StartTime:         in.old.StartTime,
	}
	if st.StartTime == nil {
		st.StartTime = api.NewTimePtr(in.now)
	}
	if pod.Spec.HostNetwork {
		st.PodIP = in.hostIP
	} else {
		st.PodIP = in.podIP
	}
	if st.PodIP != "" {
		st.PodIPs = []api.PodIP{{IP: st.PodIP}}
	}

	initDone := true
	initFailed := false
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := containerStatus(pc, in.reasons, c, true, ReasonContainerCreating)
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			initDone = false
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 && pod.Spec.RestartPolicy == api.RestartPolicyNever {
			initFailed = true
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	// once an app container exists, initialisation is over
	for i := range pod.Spec.Containers {
		if pc.latest(false, pod.Spec.Containers[i].Name) != nil {
			initDone = true
		}
	}
	appWaiting := ReasonContainerCreating
	if !initDone {
		appWaiting = ReasonPodInitializing
	}
	for i := range pod.Spec.Containers {
		cs := containerStatus(pc, in.reasons, &pod.Spec.Containers[i], false, appWaiting)
		if cs.State.Running != nil && in.probed != nil {
			ready, started := in.probed(cs.Name, strings.TrimPrefix(cs.ContainerID, containerIDPrefix))
			cs.Ready, cs.Started = ready && started, &started
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}

	st.Phase = podPhase(pod, st, initDone, initFailed)
	if in.stopped && st.Phase != api.PodSucceeded && st.Phase != api.PodFailed {
		st.Phase = api.PodFailed
		if allSucceeded(st.ContainerStatuses) {
			st.Phase = api.PodSucceeded
		}
	}
	st.Conditions = conditions(pod, st, initDone, in.old.Conditions, in.now)
	return st
}

// containerStatus is the status of container c from its newest and
// previous instances and the recorded waiting reason.
func containerStatus(pc podContainers, reasons map[string]waitingReason, c *api.Container, init bool, defaultWaiting string) api.ContainerStatus {
	cs := api.ContainerStatus{Name: c.Name, Image: c.Image}
	cur := pc.latest(init, c.Name)
	reason, hasReason := reasons[containerKey(init, c.Name)]
	if cur == nil {
		r := waitingReason{Reason: defaultWaiting}
		if hasReason {
			r = reason
		}
		cs.State.Waiting = &api.ContainerStateWaiting{Reason: r.Reason, Message: r.Message}
		return cs
	}
	cs.RestartCount = int32(cur.RestartCount)
	cs.ImageID = cur.ImageID
	cs.ContainerID = containerIDPrefix + cur.ID
	if prev := pc.previous(init, c.Name); prev != nil && prev.State == runtime.StateExited {
		cs.LastTerminationState.Terminated = terminated(prev)
	}
	switch cur.State {
	case runtime.StateRunning:
		cs.State.Running = &api.ContainerStateRunning{StartedAt: api.NewTime(cur.StartedAt)}
		cs.Ready = !init
		started := true
		cs.Started = &started
	case runtime.StateExited:
		if hasReason { // waiting to be restarted (back-off, pull, config)
			cs.LastTerminationState.Terminated = terminated(cur)
			cs.State.Waiting = &api.ContainerStateWaiting{Reason: reason.Reason, Message: reason.Message}
		} else {
			cs.State.Terminated = terminated(cur)
		}
		started := false
		cs.Started = &started
	default: // created, unknown
		r := waitingReason{Reason: ReasonContainerCreating}
		if hasReason {
			r = reason
		}
		cs.State.Waiting = &api.ContainerStateWaiting{Reason: r.Reason, Message: r.Message}
		started := false
		cs.Started = &started
	}
	return cs
}

func terminated(c *runtime.ContainerStatus) *api.ContainerStateTerminated {
	return &api.ContainerStateTerminated{
		ExitCode:    c.ExitCode,
		Reason:      c.Reason,
		Message:     c.Message,
		StartedAt:   api.NewTime(c.StartedAt),
		FinishedAt:  api.NewTime(c.FinishedAt),
		ContainerID: containerIDPrefix + c.ID,
	}
}

// podPhase is the kubelet's getPhase over the app container statuses.
func podPhase(pod *api.Pod, st api.PodStatus, initDone, initFailed bool) api.PodPhase {
	if initFailed {
		return api.PodFailed
	}
	if !initDone {
		return api.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, cs := range st.ContainerStatuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++ // restarting
			} else {
				waiting++
			}
		}
	}
	switch {
	case waiting > 0:
		return api.PodPending
	case running > 0:
		return api.PodRunning
	case stopped > 0:
		if pod.Spec.RestartPolicy == api.RestartPolicyAlways || pod.Spec.RestartPolicy == "" {
			return api.PodRunning
		}
		if stopped == succeeded {
			return api.PodSucceeded
		}
		if pod.Spec.RestartPolicy == api.RestartPolicyNever {
			return api.PodFailed
		}
		return api.PodRunning
	}
	return api.PodPending
}

func allSucceeded(list []api.ContainerStatus) bool {
	for _, cs := range list {
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t == nil || t.ExitCode != 0 {
			return false
		}
	}
	return true
}

// conditions are PodScheduled, Initialized, ContainersReady and Ready;
// a condition keeps its lastTransitionTime from old while its status
// stays the same.
func conditions(pod *api.Pod, st api.PodStatus, initDone bool, old []api.PodCondition, now time.Time) []api.PodCondition {
	var notReady []string
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			notReady = append(notReady, cs.Name)
		}
	}
	var notInit []string
	for _, cs := range st.InitContainerStatuses {
		if t := cs.State.Terminated; !initDone && (t == nil || t.ExitCode != 0) {
			notInit = append(notInit, cs.Name)
		}
	}
	cond := func(typ string, ok bool, reason, msg string) api.PodCondition {
		c := api.PodCondition{Type: typ, Status: api.ConditionTrue}
		if !ok {
			c.Status, c.Reason, c.Message = api.ConditionFalse, reason, msg
		}
		c.LastTransitionTime = api.NewTime(now)
		for _, o := range old {
			if o.Type == typ && o.Status == c.Status && !o.LastTransitionTime.IsZero() {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		return c
	}
	terminal := st.Phase == api.PodSucceeded || st.Phase == api.PodFailed
	ready := len(notReady) == 0 && !terminal
	readyReason, readyMsg := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(notReady, " "))
	if terminal {
		readyReason, readyMsg = "PodCompleted", ""
	}
	return []api.PodCondition{
		cond(api.PodInitialized, initDone, "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " "))),
		cond(api.PodReady, ready, readyReason, readyMsg),
		cond(api.ContainersReady, ready, readyReason, readyMsg),
		cond(api.PodScheduled, true, "", ""),
	}
}
