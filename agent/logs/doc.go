// Package logs is the agent's log endpoint: an HTTPS handler for
// /containerLogs/{namespace}/{pod}/{container} (follow, tailLines,
// limitBytes, previous) that reads the container log files the runtime
// writes, served with the agent's self-signed certificate (pinned by the
// server through a Node annotation) to clients whose certificate the
// cluster CA signed for the server.
package logs
