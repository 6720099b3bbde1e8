// Package status writes what the agent observes back to the server: pod
// statuses (the status manager, with mirror pods for static pods and the
// confirmation of graceful deletions) and events (the Recorder). It reads
// and writes only pods and events through the API client; it never
// touches containers.
package status
