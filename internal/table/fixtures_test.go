package table

import (
	"time"

	"github.com/skiffhq/skiff/api"
)

// now is the fixed "current time" of every test.
var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// ago is a timestamp d before now.
func ago(d time.Duration) api.Time { return api.NewTime(now.Add(-d)) }

func agoPtr(d time.Duration) *api.Time { t := ago(d); return &t }

func meta(ns, name string, age time.Duration) api.ObjectMeta {
	return api.ObjectMeta{Name: name, Namespace: ns, UID: "uid-" + name, CreationTimestamp: ago(age)}
}

func running(since time.Duration) api.ContainerState {
	return api.ContainerState{Running: &api.ContainerStateRunning{StartedAt: ago(since)}}
}

func waiting(reason string) api.ContainerState {
	return api.ContainerState{Waiting: &api.ContainerStateWaiting{Reason: reason}}
}

func terminated(reason string, code int32, finished time.Duration) api.ContainerState {
	return api.ContainerState{Terminated: &api.ContainerStateTerminated{
		Reason: reason, ExitCode: code, StartedAt: ago(finished + time.Minute), FinishedAt: ago(finished),
	}}
}

func conds(types ...string) []api.PodCondition {
	var out []api.PodCondition
	for _, t := range types {
		out = append(out, api.PodCondition{Type: t, Status: api.ConditionTrue, LastTransitionTime: ago(time.Hour)})
	}
	return out
}
