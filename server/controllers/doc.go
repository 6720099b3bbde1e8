// Package controllers holds skiff's built-in controllers, the parts of
// kube-controller-manager an edge fleet relies on: node lifecycle,
// Deployment, ReplicaSet, DaemonSet, StatefulSet, Job, CronJob, the
// local-path volume provisioner, disruption budgets, endpoints and
// garbage collection.
//
// # Shape
//
// Each controller is fed by shared informers (informer.go): one per
// resource, each lists the store, watches from the list's revision and
// relists when the watch ends (compacted, too slow, or a read error). An
// informer keeps the latest object of every key, with indexes (pods by
// node, by controlling owner), and calls handlers that only enqueue keys.
// Controllers write through the store with resourceVersion preconditions
// and put what they wrote back into the informer (write-through), so the
// next reconcile sees its own writes even before the watch delivers them;
// the informer never lets an older revision replace a newer one.
//
// Work is keyed by object in a Queue (queue.go): a key is queued once
// however often it is added, processed by one worker at a time, retried
// with per-key exponential backoff on error. Reconciles are level
// triggered: sync(key) reads the latest state and moves the world one step
// towards the spec, whatever events led there. The decisions themselves
// are pure functions of state and now (planRollout, planDaemon,
// nodeHealthOf, evictionDue, …), tested without a store.
//
//   - Node lifecycle (nodelifecycle.go): a node whose last heartbeat is
//     older than NodeMonitorGrace gets Ready=Unknown and the unreachable
//     taints; after PodEvictionTimeout its controller-owned pods are marked
//     for deletion (graceful, so the agent stops them when the node is back)
//     and its bare pods are marked Failed (reason NodeLost). Evictions are
//     rate-limited per node, slowed or stopped when most nodes are unhealthy
//     at once (eviction.go).
//   - Deployment (deployment.go, deployment_rs.go, rollout.go): one
//     ReplicaSet per template revision owns its pods (pod-template-hash,
//     revision and change-cause annotations, revisionHistoryLimit); the
//     rollout plans over pods and writes the ReplicaSets' replicas to
//     match; RollingUpdate and Recreate; status. Standalone ReplicaSets
//     keep their own pods (replicaset.go).
//   - Job (job.go) and CronJob (cronjob.go, schedules from api/cron).
//   - StatefulSet (statefulset.go) and the local-path provisioner
//     (localpath.go); disruption budget status (disruption.go).
//   - DaemonSet (daemonset.go): one pod per matching node, rolling update
//     bounded by maxUnavailable.
//   - Garbage collection (gc.go): dependents of deleted owners, pods bound
//     to deleted nodes, terminated pods beyond a threshold, and periodic
//     sweeps the server hands in (expired join tokens and events).
//   - Endpoints (endpoints.go, endpoints_plan.go): for every Service with
//     a selector, an Endpoints object and EndpointSlices (at most 100
//     endpoints each, ready/serving/terminating conditions) of the pods it
//     selects; planSlices keeps endpoints where they are so a pod change
//     rewrites one slice.
//
// Time comes from Config.Clock; tests step a fake clock.
//
// # What it must not do
//
// Controllers never write pod specs (only metadata for deletion and
// adoption, and pod status when a node is lost), never bind pods to nodes
// except a DaemonSet's own pods, and never import other server packages but the
// scheduler's exported predicates; the server wires liveness, events and
// sweeps in through Config.
package controllers
