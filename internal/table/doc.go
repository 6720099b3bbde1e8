// Package table renders API objects as Kubernetes' server-side Tables
// (meta.k8s.io/v1 Table): the column definitions and the typed row cells
// that kube-apiserver computes in pkg/printers/internalversion for
// `kubectl get`, for every kind skiff serves. The API server answers
// kubectl's Table requests with For, and skiff's own CLI prints its
// tables from the same Columns and Row, so both show the same READY,
// STATUS, RESTARTS and AGE for the same object.
//
// Everything here is a pure function of its arguments: the current time
// comes in as now, so output is deterministic. The package depends only
// on package api; it does no I/O and must not import storage, server,
// client or CLI code.
package table
