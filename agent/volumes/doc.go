// Package volumes prepares a pod's volumes on the node, under the pod's
// directory (<pods-dir>/<namespace>_<name>_<uid>/volumes/<kind>/<name>):
// emptyDir as a directory, hostPath with Kubernetes' type checks, and
// configMap and secret volumes as files written atomically (a "..data"
// symlink swapped to a new timestamped directory, as the kubelet's atomic
// writer does). It turns a container's volumeMounts into runtime.Mounts.
//
// emptyDir with medium "Memory" is a plain directory for now (no tmpfs),
// and sizeLimit is not enforced. The package reads secrets and config maps
// through an ObjectGetter and never talks to the runtime; the kubelet calls
// Prepare before it starts containers and Cleanup once the pod is gone.
package volumes
