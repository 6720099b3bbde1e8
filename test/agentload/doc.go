// Package agentload benchmarks a real `skiff agent` process against a
// real `skiff server` process, on its own containerd with the busybox
// test image side-loaded: idle and loaded RSS, API create → Running
// latency, and how fast a burst of pods comes up. Run it with
// `go test ./test/agentload -run '^$' -bench . -benchtime 1x`.
package agentload
