// Package streaming is the agent's end of the tunnel (internal/tunnel):
// Client keeps the tunnel to the server open, reconnecting with a capped
// backoff, and Handler answers what the server sends through it —
// container logs, exec and attach sessions (Frames over an upgraded
// stream) and port-forward connections (raw bytes into the pod's network
// namespace).
//
// Every request arriving here came through the tunnel this agent dialled
// to the server it pinned, so the handler trusts it; it must never be
// served on a listening socket.
package streaming
