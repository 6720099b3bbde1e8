package runtime

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/api"
)

// Runtime is what the agent's sync loop needs from a container runtime.
// The containerd implementation lives in agent/runtime/containerd; unit
// tests use agent/runtime/fake.
//
// A pod is a sandbox (its network namespace and its cgroup) plus
// containers. Every method is idempotent where that makes sense, so the
// agent can retry after a crash: creating a sandbox that exists returns
// it, removing what is gone succeeds, and container IDs are
// deterministic (ContainerID), so creating a container that exists
// returns ErrAlreadyExists with nothing changed.
type Runtime interface {
	// Version names the runtime and its version ("containerd 1.6.20").
	Version(ctx context.Context) (string, error)
	// Status is nil when the runtime answers and can run containers;
	// the node's Ready condition follows it.
	Status(ctx context.Context) error

	// EnsureImage makes ref present per policy (Always pulls, IfNotPresent
	// pulls when missing, Never fails with ErrImageNeverPull when
	// missing) and returns it. A failed pull wraps ErrImagePull. auth
	// holds credentials from the pod's imagePullSecrets, tried in order
	// for ref's registry.
	EnsureImage(ctx context.Context, ref string, policy api.PullPolicy, auth []RegistryAuth) (Image, error)
	// ImportImages loads every image of an OCI or docker-archive tarball.
	ImportImages(ctx context.Context, r io.Reader) ([]Image, error)
	// ListImages returns the images present (the node status reports
	// them; the scheduler scores image locality).
	ListImages(ctx context.Context) ([]Image, error)
	// RemoveImage removes the image named ref (as ListImages names it);
	// its content goes with the runtime's garbage collection. Removing
	// an image that is gone is not an error. The eviction manager calls
	// it only for images no container uses.
	RemoveImage(ctx context.Context, ref string) error

	// CreateSandbox makes the pod's cgroup (under the QoS class's parent,
	// with the pod-level limits) and, unless HostNetwork, a new network
	// namespace with loopback up. It returns the existing sandbox when
	// there is one.
	CreateSandbox(ctx context.Context, cfg SandboxConfig) (Sandbox, error)
	// RemoveSandbox removes the pod's network namespace and cgroup. Call
	// it after every container of the pod is removed.
	RemoveSandbox(ctx context.Context, podUID string) error

	// CreateContainer creates (not starts) a container from cfg, with ID
	// ContainerID(cfg.PodUID, cfg.Name, cfg.RestartCount). Its stdout
	// and stderr go to cfg.LogPath.
	CreateContainer(ctx context.Context, cfg ContainerConfig) (string, error)
	// StartContainer starts a created container.
	StartContainer(ctx context.Context, id string) error
	// StopContainer sends the container's stop signal (SIGTERM), waits
	// up to grace, then SIGKILLs, and returns once it has exited. A
	// container already stopped is not an error.
	StopContainer(ctx context.Context, id string, grace time.Duration) error
	// RemoveContainer removes a stopped container and its snapshot (its
	// log file stays; the agent's housekeeping removes logs).
	RemoveContainer(ctx context.Context, id string) error

	// Exec runs cmd inside the running container id (its namespaces,
	// environment and user) and returns its exit code and combined output
	// (capped). After timeout the command is killed and the error wraps
	// ErrExecTimeout. Probes use it.
	Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (exitCode int, output []byte, err error)

	// ListPods returns every pod the runtime holds anything of — running
	// or exited containers, or just a sandbox — grouped by pod UID. It is
	// the source of truth the agent adopts after a restart.
	ListPods(ctx context.Context) ([]PodStatus, error)
	// PodStatus returns what the runtime holds of one pod, as ListPods
	// would list it, or nil when it holds nothing. It costs a look at that
	// pod's containers only, however many pods run: the sync loop reads
	// its pod's fresh state with it.
	PodStatus(ctx context.Context, uid string) (*PodStatus, error)
	// Events streams container lifecycle events until ctx ends. The
	// channel may drop events when the reader is slow: the agent relists
	// periodically as a safety net.
	Events(ctx context.Context) (<-chan Event, error)
}

// Errors a Runtime returns (wrapped, so test with errors.Is).
var (
	ErrNotFound       = errors.New("not found")
	ErrAlreadyExists  = errors.New("already exists")
	ErrImagePull      = errors.New("image pull failed")
	ErrImageNeverPull = errors.New("image not present and pull policy is Never")
	ErrInvalidConfig  = errors.New("invalid container config")
	ErrExecTimeout    = errors.New("exec timed out")
	// ErrUnavailable: the runtime (containerd) is not answering; a
	// later try may work.
	ErrUnavailable = errors.New("container runtime unavailable")
)

// Container labels every container carries, so that ListPods can rebuild
// the agent's view from the runtime alone.
const (
	LabelPodUID        = "io.skiff.pod.uid"
	LabelPodName       = "io.skiff.pod.name"
	LabelPodNamespace  = "io.skiff.pod.namespace"
	LabelContainerName = "io.skiff.container.name"
	LabelRestartCount  = "io.skiff.container.restart"
	LabelInit          = "io.skiff.container.init" // "true" on init containers
	LabelHash          = "io.skiff.container.hash" // ContainerConfig.Hash
)

// ContainerID is the runtime ID of a pod's container at a restart count:
// "<pod uid>-<name>-<restart>", valid as a containerd ID.
func ContainerID(podUID, name string, restart int) string {
	return podUID + "-" + name + "-" + strconv.Itoa(restart)
}

// RegistryAuth is one credential for a registry host, from a
// kubernetes.io/dockerconfigjson secret.
type RegistryAuth struct {
	Host     string // "registry.example.com:5000"; "docker.io" for Docker Hub
	Username string
	Password string
}

// String never shows the password.
func (a RegistryAuth) String() string { return "RegistryAuth{" + a.Host + ", " + a.Username + "}" }

// Image is an image present in the runtime.
type Image struct {
	Ref  string // the name it was asked for, normalised ("docker.io/library/busybox:latest")
	ID   string // content digest of its config ("sha256:…")
	Size int64  // bytes unpacked, when known
	// CreatedAt is when the image was pulled or imported (zero if
	// unknown); image garbage collection removes the oldest first.
	CreatedAt time.Time
}

// SandboxConfig describes a pod's sandbox.
type SandboxConfig struct {
	PodUID      string
	PodName     string
	Namespace   string
	HostNetwork bool
	QOSClass    api.PodQOSClass
	// Pod-level resources, summed over the app containers (the larger of
	// that and any init container), as the kubelet does. Zero means none.
	CPURequestMilli int64
	CPULimitMilli   int64
	MemoryLimit     int64 // bytes
}

// Sandbox is a pod's created sandbox.
type Sandbox struct {
	PodUID string
	// NetNSPath is the bind-mounted network namespace the containers
	// join; "" for hostNetwork pods.
	NetNSPath string
	// CgroupParent is the pod cgroup the containers' cgroups go under,
	// relative to the cgroup root ("/skiff/burstable/pod<uid>").
	CgroupParent string
}

// Mount binds a host path into a container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
}

// ContainerConfig is everything the runtime needs to create a container;
// the agent has resolved env, volumes and the image before.
type ContainerConfig struct {
	PodUID       string
	PodName      string
	Namespace    string
	Name         string // the container's name in the pod spec
	RestartCount int
	Init         bool
	// Hash identifies the spec the container was made from (the agent
	// restarts a container whose spec changed).
	Hash string

	Image      string // ref as EnsureImage returned it
	Command    []string
	Args       []string
	WorkingDir string
	Env        []string // "NAME=value", already resolved
	Mounts     []Mount
	Hostname   string

	CPURequestMilli int64 // cpu shares/weight
	CPULimitMilli   int64 // cpu quota; 0 = none
	MemoryLimit     int64 // bytes; 0 = none

	RunAsUser              *int64
	RunAsGroup             *int64
	Privileged             bool
	ReadOnlyRootFilesystem bool
	CapAdd                 []string
	CapDrop                []string

	// LogPath is the file stdout and stderr go to.
	LogPath string
	Sandbox Sandbox
}

// ContainerState is where a container is in its life.
type ContainerState string

// Container states.
const (
	StateCreated ContainerState = "created"
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
	StateUnknown ContainerState = "unknown"
)

// ContainerStatus is what the runtime knows of one container.
type ContainerStatus struct {
	ID           string
	PodUID       string
	Name         string
	RestartCount int
	Init         bool
	Hash         string
	Image        string // ref
	ImageID      string
	State        ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time // zero if never started
	FinishedAt   time.Time // zero unless exited
	ExitCode     int32
	// Reason is set for exited containers: "OOMKilled" when the kernel
	// killed it for memory, "Completed" for exit code 0, else "Error".
	Reason  string
	Message string
	PID     uint32
	LogPath string
}

// PodStatus is what the runtime holds of one pod.
type PodStatus struct {
	UID        string
	Name       string
	Namespace  string
	Sandbox    *Sandbox // nil when the pod has no sandbox
	Containers []ContainerStatus
}

// EventType is a kind of container lifecycle event.
type EventType string

// Event types.
const (
	ContainerStarted EventType = "ContainerStarted"
	ContainerDied    EventType = "ContainerDied"
	ContainerOOM     EventType = "ContainerOOM"
)

// Event is one container lifecycle event.
type Event struct {
	Type        EventType
	PodUID      string
	ContainerID string
}
