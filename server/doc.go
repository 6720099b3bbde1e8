// Package server is skiff's control plane process: Run wires the pieces
// of server/ together and serves them over HTTPS on one port.
//
// It owns the server's data directory layout (<data-dir>/server/: tls/,
// state.db, admin.token, join.token, and the client configs skiff.yaml
// and kubeconfig.yaml it writes at every start), the top-level HTTP
// router and its middleware (request log, panic recovery, bearer
// authentication), the unauthenticated endpoints (/healthz, /readyz,
// /version, /cacerts, POST /api/v1/join), the admin-only join token
// endpoints under /api/v1/skiff/tokens, the facts authorization needs
// (which node a stored pod is bound to, whether a node's pods reference a
// secret), and graceful shutdown.
//
// It delegates: resource handling to server/apiserver (which calls back
// into this package through its Authorize hook), tokens, credentials and
// the authorization decision to server/auth, certificates to
// server/tlsutil, persistence to storage. The scheduler and controllers
// (later issues) will be started from Run as well. It depends on api and
// storage and never on agent.
package server
