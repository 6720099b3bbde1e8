// Package containerd implements the agent's runtime.Runtime on a
// containerd daemon (1.6 or later) through the containerd v2 Go client.
//
// Everything lives in one containerd namespace ("skiff"). A pod's sandbox
// is its cgroup (agent/cgroups) plus, unless it uses the host's network,
// a network namespace the package creates itself and bind-mounts at
// <DataDir>/netns/<pod uid>, with loopback up; there is no pause
// container. A small record per sandbox (<DataDir>/sandboxes/<uid>.json)
// keeps the pod's name so that a restarted agent can list sandboxes that
// have no containers.
//
// Containers carry the runtime.Label* labels plus labels of this
// package's own for their log path, image ID, start time and — once the
// task has exited — its exit code, time and reason. Exit facts are copied
// into labels before the dead task is deleted, so they survive a new
// Runtime (an agent restart). Container stdout and stderr go straight to
// the container's log file, opened by the shim (a file:// log URI), so
// logging does not depend on the agent running.
//
// The package only reads images (pull, import, list); it never uses
// containerd's Transfer service, which 1.6 lacks. Subpackage daemon runs
// a containerd of skiff's own.
package containerd
