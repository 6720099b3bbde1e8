// Package uid makes object UIDs: random (version 4) UUIDs in the form
// Kubernetes uses for metadata.uid.
package uid
