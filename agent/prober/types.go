package prober

import (
	"context"
	"time"
)

// ProbeType is a kind of probe.
type ProbeType int

// Probe types.
const (
	Liveness ProbeType = iota
	Readiness
	Startup
)

func (t ProbeType) String() string {
	switch t {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return "Unknown"
}

// Result is a verdict of a probe on one container instance.
type Result int

// Results. Unknown: no verdict yet.
const (
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}

// Update is a change of verdict, delivered through Config.OnUpdate.
type Update struct {
	PodUID      string
	Container   string
	ContainerID string
	Type        ProbeType
	Result      Result
	// Message says why, for a failure (the probe's output or error).
	Message string
}

// Container is a running app container of a pod, as the kubelet sees it.
type Container struct {
	Name      string
	ID        string
	StartedAt time.Time
}

// Execer runs a command in a container; agent/runtime.Runtime is one.
type Execer interface {
	Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (exitCode int, output []byte, err error)
}
