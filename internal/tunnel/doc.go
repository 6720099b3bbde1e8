// Package tunnel is the connection an agent dials to the server and keeps
// open, so that the server can reach the agent without ever dialling it
// (agents sit behind NAT and firewalls).
//
// The agent sends "POST /api/v1/skiff/tunnel" with its node credential
// on its HTTP/2 API connection; the answer streams a line for each
// connection the server wants, and the agent answers each with a POST
// whose two streamed bodies are that connection (Registry.ServeControl
// and ServeExchange on the server, ReadOpens and Listener on the agent;
// see onapi.go). An agent with a shared stream (the API server's
// WatchesPath, beside its watches) reads those lines there instead, and
// the server's end of the tunnel outlives each such stream
// (Registry.AttachControl, shared.go). Where HTTP/2 is not to be had, the agent opens TLS to the
// server (pinning the cluster CA), sends "GET /api/v1/skiff/tunnel" with
// "Upgrade: skiff-tunnel/1", and after "101 Switching Protocols" runs a
// hashicorp/yamux session over the connection (Dial, Registry.Accept).
// The server is the yamux client. Either way the server opens one
// connection per request it sends to the agent (logs, exec, attach,
// port-forward), and the agent serves plain HTTP/1.1 on each. Each has
// its own flow-control window (HTTP/2's or yamux's), so a slow one does
// not stall the others.
//
// Long-lived exchanges (exec, attach, port-forward) upgrade their stream
// once more ("Upgrade: skiff-stream/1"); exec and attach then carry
// Frames, port-forward carries the raw bytes of one TCP connection.
//
// The package holds both ends (ReadOpens, Listener and Dial for the
// agent, Registry for the server) and the frame codec. It knows nothing
// of pods or of the Kubernetes protocols that the server speaks to
// kubectl.
package tunnel
