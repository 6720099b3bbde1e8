// Package kubelet is the heart of skiff's agent: the kubelet's mechanisms,
// leaner. A sync loop (Run) merges desired pods from the config sources,
// lifecycle events from the PLEG (a periodic relist of the runtime plus its
// event stream), a work queue of per-pod next-sync times, housekeeping and
// probe results, and hands each pod to its own pod worker. A worker
// serialises its pod's work: syncPod (decide actions from the desired spec
// and the runtime's view, then create the sandbox, run init containers in
// order, start, restart or replace app containers with crash-loop and
// image-pull back-off) until the pod is killed or finishes, killPod
// (graceful stop, then removal), and cleanup once the pod is gone. Status
// is derived from the runtime's view as the kubelet's generateAPIPodStatus
// does and handed to a StatusManager.
//
// The package owns the pod directories under Config.PodsDir (volumes via
// agent/volumes, container logs). It talks to containers only through
// agent/runtime.Runtime and to the server only through the StatusManager
// and ObjectGetter interfaces declared here; it must not import server,
// storage, or the containerd runtime.
package kubelet
