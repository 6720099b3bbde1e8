// Package agent is skiff's node agent, its kubelet: Run wires containerd
// (a managed daemon when none runs), the pod sync loop (agent/kubelet)
// fed by the local checkpoint, static pod files and — once joined — the
// server's assignment stream (agent/config), node registration and
// heartbeats (agent/node), status reporting (agent/status), the log
// endpoint the server proxies to (agent/logs) and image side-loading
// from <data-dir>/agent/images. The kubelet starts before the server
// answers, so pods keep running while it is away. It depends on api and
// never on server or storage (except in tests).
package agent
