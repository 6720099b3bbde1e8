package kubelet

import (
	"github.com/skiffhq/skiff/api"
)

// refused reports whether pod must not run: Config.Admit refused it now
// or earlier. Admission is asked only for a pod the agent has never run:
// no worker knows it, the runtime holds nothing of it, and it is neither
// deleted nor finished. A refused pod's status becomes Failed with the
// reason Admit gave. Called from the sync loop.
func (k *Kubelet) refused(pod *api.Pod) bool {
	if k.isRejected(pod.UID) {
		return true
	}
	if k.cfg.Admit == nil || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed {
		return false
	}
	if _, known := k.workers.state(pod.UID); known || k.pleg.get(pod.UID) != nil {
		return false
	}
	ok, reason, message := k.cfg.Admit(pod, k.admittedPods(pod.UID))
	if ok {
		return false
	}
	k.log.Info("pod refused by admission", "pod", podRef(pod), "reason", reason, "message", message)
	k.mu.Lock()
	k.rejected[pod.UID] = true
	k.mu.Unlock()
	st := pod.Status
	st.Phase = api.PodFailed
	st.Reason = reason
	st.Message = message
	st.QOSClass = api.QOSClass(pod)
	if st.StartTime == nil {
		st.StartTime = api.NewTimePtr(k.clock.Now())
	}
	k.sendStatus(pod, st)
	return true
}

// admittedPods are the desired pods other than uid that run or may run:
// not refused and not terminated.
func (k *Kubelet) admittedPods(uid string) []*api.Pod {
	var out []*api.Pod
	for _, info := range k.Pods() {
		if info.Pod.UID == uid || info.State == PodTerminated {
			continue
		}
		out = append(out, info.Pod)
	}
	return out
}

func (k *Kubelet) isRejected(uid string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.rejected[uid]
}
