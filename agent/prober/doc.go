// Package prober runs the liveness, readiness and startup probes of a
// node's containers, as the kubelet's prober does.
//
// One worker goroutine runs per container, per probe type the container
// declares. A worker probes right away and then every periodSeconds of
// the injected clock, skipping probes until initialDelaySeconds after the
// container started; it turns raw results into a verdict with
// successThreshold and failureThreshold, and reports every change of
// verdict through Config.OnUpdate (the kubelet turns those into syncs of
// the pod). A startup probe gates the other two: until it succeeds they do
// not run, the container is not ready, and liveness is not judged.
//
// Actions: exec through the container runtime (Execer), httpGet and
// tcpSocket against the pod IP (or the probe's host) through Config.Dial.
//
// Verdicts are per container instance (container ID): a restarted
// container starts over (not ready, not started, alive). The kubelet reads
// them with Ready, Started and LivenessFailed; it restarts a container
// whose liveness (or startup) probe failed. The package must not stop or
// start containers itself.
package prober
