// Package soak is the long-running churn test of issue 22: a real
// `skiff server` and `skiff agent` (test/faults/local's harness, with a
// containerd of the test's own) take 10 bare pod creates and 10 deletes a
// second while two Deployments scale between 1 and 6 replicas every 15 s.
// Every sample records the SQLite database and WAL sizes, the RSS and
// goroutines of server and agent, and the pods and running containers;
// at the end the test writes soak.csv and soak.png (drawn by Render, the
// package's own line charts on image/png) and prints a summary (start,
// end, min, max, least-squares slope per hour). Runs of 10 minutes or
// more fail when a figure grows (Growth); every run ends by deleting
// everything and checking that no container, cgroup or veth is left.
//
// `go test` runs a 20 s form; `make soak DURATION=1h` the real one
// (SKIFF_SOAK_DURATION, SKIFF_SOAK_RATE, SKIFF_SOAK_OUT).
package soak
