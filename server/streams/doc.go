// Package streams speaks kubectl's streaming protocols on the server's
// side and relays them to an agent's tunnel stream (internal/tunnel):
//
//   - exec and attach: WebSocket with the subprotocol v5.channel.k8s.io
//     (v4.channel.k8s.io as a fallback): binary messages whose first byte
//     is the channel (0 stdin, 1 stdout, 2 stderr, 3 the final Status,
//     4 terminal size, and in v5 255 to close a channel). They map one
//     to one onto tunnel Frames.
//   - port-forward: SPDY/3.1 (moby/spdystream) with the
//     portforward.k8s.io stream protocol, either tunnelled in a WebSocket
//     (subprotocol SPDY/3.1+portforward.k8s.io, kubectl 1.31+'s default)
//     or over a plain HTTP upgrade. Each forwarded connection is a pair
//     of SPDY streams (error and data) sharing a requestID; the data
//     stream is piped to one agent stream.
//
// It imports nothing of Kubernetes; it knows nothing of pods, nodes or
// authorization, which the caller settled before.
package streams
