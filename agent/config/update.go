package config

import "github.com/skiffhq/skiff/api"

// Op is what a PodUpdate does, as in the kubelet's PodConfig.
type Op int

// The operations of a PodUpdate.
const (
	// ADD: pods new to the agent.
	ADD Op = iota
	// UPDATE: pods whose spec or metadata changed.
	UPDATE
	// DELETE: pods to stop gracefully (deletionTimestamp was set).
	DELETE
	// REMOVE: pods gone from their source; stop them now.
	REMOVE
	// RECONCILE: pods whose status only changed in the source.
	RECONCILE
	// RESTORE: pods from the local checkpoint, at start, before the server
	// answers: run them as they were.
	RESTORE
)

func (o Op) String() string {
	switch o {
	case ADD:
		return "ADD"
	case UPDATE:
		return "UPDATE"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case RECONCILE:
		return "RECONCILE"
	case RESTORE:
		return "RESTORE"
	}
	return "Op(?)"
}

// Sources of pods.
const (
	SourceAPI        = "api"        // the server's assignment stream
	SourceFile       = "file"       // static pods in <data-dir>/agent/pod-manifests
	SourceCheckpoint = "checkpoint" // the local checkpoint, at start
)

// PodUpdate is one change to the desired pods, from one source. Pods are
// owned by the receiver: sources send copies.
type PodUpdate struct {
	Op     Op
	Source string
	Pods   []*api.Pod
}
