// Package api holds skiff's resource types — Node, Pod, Namespace, Event,
// Secret, ConfigMap, PersistentVolumeClaim, PersistentVolume, Deployment,
// DaemonSet, ReplicaSet, StatefulSet, Job, CronJob, PodDisruptionBudget,
// StorageClass, Status, lists and watch events — with the field names and
// JSON shape of Kubernetes core/v1, apps/v1, batch/v1, policy/v1 and
// storage.k8s.io/v1, plus their defaulting, validation and strict decoding.
// Subpackage cron parses CronJob schedules.
//
// It is the bottom of skiff's dependency graph: it imports only its own
// subpackages (resource for quantities, labels and fields for selectors) and
// sigs.k8s.io/yaml, never storage, server or agent code, and it does no I/O.
// The types are plain data: callers own what they decode and may mutate it;
// nothing here is safe for concurrent mutation.
package api
