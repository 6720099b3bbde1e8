// Package events records Kubernetes-style events for the server and its
// agents: a repeat of an event that is still alive (same object, type,
// reason, message and source) bumps the stored event's count and
// lastTimestamp instead of adding a row, and events expire one TTL (1 h)
// after they were last seen. The API server stores every POSTed event
// through a Sink; in-process components use a Recorder.
package events
