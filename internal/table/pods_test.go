package table

import (
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func TestSummarizePod(t *testing.T) {
	oneContainer := api.PodSpec{Containers: []api.Container{{Name: "a"}}}
	twoContainers := api.PodSpec{Containers: []api.Container{{Name: "a"}, {Name: "b"}}}
	withInit := api.PodSpec{InitContainers: []api.Container{{Name: "i1"}, {Name: "i2"}}, Containers: []api.Container{{Name: "a"}}}
	cs := func(name string, ready bool, st api.ContainerState) api.ContainerStatus {
		return api.ContainerStatus{Name: name, Ready: ready, State: st}
	}
	signal := api.ContainerState{Terminated: &api.ContainerStateTerminated{ExitCode: 137, Signal: 9}}
	exit := api.ContainerState{Terminated: &api.ContainerStateTerminated{ExitCode: 3}}
	deleted := agoPtr(time.Second)
	tests := []struct {
		name        string
		pod         api.Pod
		wantReady   string
		wantStatus  string
		wantRestart int
	}{
		{"pending, no statuses", api.Pod{Spec: oneContainer, Status: api.PodStatus{Phase: api.PodPending}}, "0/1", "Pending", 0},
		{"status reason wins over phase", api.Pod{Spec: oneContainer, Status: api.PodStatus{Phase: api.PodFailed, Reason: "Evicted"}}, "0/1", "Evicted", 0},
		{"scheduling gated", api.Pod{Spec: oneContainer, Status: api.PodStatus{Phase: api.PodPending,
			Conditions: []api.PodCondition{{Type: api.PodScheduled, Status: api.ConditionFalse, Reason: "SchedulingGated"}}}}, "0/1", "SchedulingGated", 0},
		{"running and ready", api.Pod{Spec: twoContainers, Status: api.PodStatus{Phase: api.PodRunning,
			ContainerStatuses: []api.ContainerStatus{cs("a", true, running(time.Hour)), cs("b", false, running(time.Hour))}}}, "1/2", "Running", 0},
		{"first container's reason wins", api.Pod{Spec: twoContainers, Status: api.PodStatus{Phase: api.PodRunning,
			ContainerStatuses: []api.ContainerStatus{cs("a", false, waiting("ImagePullBackOff")), cs("b", false, waiting("CrashLoopBackOff"))}}}, "0/2", "ImagePullBackOff", 0},
		{"exit code without reason", api.Pod{Spec: oneContainer, Status: api.PodStatus{Phase: api.PodFailed,
			ContainerStatuses: []api.ContainerStatus{cs("a", false, exit)}}}, "0/1", "ExitCode:3", 0},
		{"signal without reason", api.Pod{Spec: oneContainer, Status: api.PodStatus{Phase: api.PodFailed,
			ContainerStatuses: []api.ContainerStatus{cs("a", false, signal)}}}, "0/1", "Signal:9", 0},
		{"completed with one still running and ready", api.Pod{Spec: twoContainers, Status: api.PodStatus{Phase: api.PodRunning, Conditions: conds(api.PodReady),
			ContainerStatuses: []api.ContainerStatus{cs("a", false, terminated("Completed", 0, time.Minute)), cs("b", true, running(time.Hour))}}}, "1/2", "Running", 0},
		{"completed with one still running, pod not ready", api.Pod{Spec: twoContainers, Status: api.PodStatus{Phase: api.PodRunning,
			ContainerStatuses: []api.ContainerStatus{cs("a", false, terminated("Completed", 0, time.Minute)), cs("b", true, running(time.Hour))}}}, "1/2", "NotReady", 0},
		{"init 0/2", api.Pod{Spec: withInit, Status: api.PodStatus{Phase: api.PodPending,
			InitContainerStatuses: []api.ContainerStatus{cs("i1", false, running(time.Minute))}}}, "0/1", "Init:0/2", 0},
		{"init 1/2 after first succeeded", api.Pod{Spec: withInit, Status: api.PodStatus{Phase: api.PodPending,
			InitContainerStatuses: []api.ContainerStatus{cs("i1", false, terminated("Completed", 0, time.Minute)), cs("i2", false, waiting(reasonPodInitializing))}}}, "0/1", "Init:1/2", 0},
		{"init crash loop", api.Pod{Spec: withInit, Status: api.PodStatus{Phase: api.PodPending,
			InitContainerStatuses: []api.ContainerStatus{{Name: "i1", State: waiting("CrashLoopBackOff"), RestartCount: 4}}}}, "0/1", "Init:CrashLoopBackOff", 4},
		{"init failed with reason", api.Pod{Spec: withInit, Status: api.PodStatus{Phase: api.PodFailed,
			InitContainerStatuses: []api.ContainerStatus{cs("i1", false, terminated("Error", 1, time.Minute))}}}, "0/1", "Init:Error", 0},
		{"init failed with exit code", api.Pod{Spec: withInit, Status: api.PodStatus{Phase: api.PodFailed,
			InitContainerStatuses: []api.ContainerStatus{cs("i1", false, exit)}}}, "0/1", "Init:ExitCode:3", 0},
		{"init killed by signal", api.Pod{Spec: withInit, Status: api.PodStatus{Phase: api.PodFailed,
			InitContainerStatuses: []api.ContainerStatus{cs("i1", false, signal)}}}, "0/1", "Init:Signal:9", 0},
		{"init restarts stop counting once initialized", api.Pod{Spec: withInit, Status: api.PodStatus{Phase: api.PodRunning, Conditions: conds(api.PodInitialized),
			InitContainerStatuses: []api.ContainerStatus{{Name: "i1", State: terminated("Completed", 0, time.Hour), RestartCount: 2},
				{Name: "i2", State: terminated("Completed", 0, time.Hour)}},
			ContainerStatuses: []api.ContainerStatus{{Name: "a", Ready: true, State: running(time.Hour), RestartCount: 1}}}}, "1/1", "Running", 1},
		{"terminating", api.Pod{ObjectMeta: api.ObjectMeta{DeletionTimestamp: deleted}, Spec: oneContainer, Status: api.PodStatus{Phase: api.PodRunning,
			ContainerStatuses: []api.ContainerStatus{cs("a", true, running(time.Hour))}}}, "1/1", "Terminating", 0},
		{"deleted after it finished keeps its status", api.Pod{ObjectMeta: api.ObjectMeta{DeletionTimestamp: deleted}, Spec: oneContainer, Status: api.PodStatus{Phase: api.PodSucceeded,
			ContainerStatuses: []api.ContainerStatus{cs("a", false, terminated("Completed", 0, time.Hour))}}}, "0/1", "Completed", 0},
		{"node lost", api.Pod{ObjectMeta: api.ObjectMeta{DeletionTimestamp: deleted}, Spec: oneContainer, Status: api.PodStatus{Phase: api.PodRunning, Reason: "NodeLost"}}, "0/1", "Unknown", 0},
	}
	for _, tc := range tests {
		s := summarizePod(&tc.pod)
		ready := itoa(s.ready) + "/" + itoa(s.total)
		if ready != tc.wantReady || s.status != tc.wantStatus || s.restarts != tc.wantRestart {
			t.Errorf("summarizePod(%s) = %s %q %d; want %s %q %d", tc.name, ready, s.status, s.restarts, tc.wantReady, tc.wantStatus, tc.wantRestart)
		}
	}
}

func TestRestartsCell(t *testing.T) {
	tests := []struct {
		s    podSummary
		want string
	}{
		{podSummary{}, "0"},
		{podSummary{restarts: 3}, "3"},
		{podSummary{restarts: 3, lastRestart: now.Add(-5 * time.Minute)}, "3 (5m ago)"},
		{podSummary{restarts: 0, lastRestart: now.Add(-5 * time.Minute)}, "0"},
	}
	for _, tc := range tests {
		if got := tc.s.restartsCell(now); got != tc.want {
			t.Errorf("restartsCell(%+v) = %q; want %q", tc.s, got, tc.want)
		}
	}
}
