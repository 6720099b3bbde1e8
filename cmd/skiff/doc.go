// Command skiff is the single binary of skiff: `skiff server` (control
// plane), `skiff agent` (node agent) and the client commands. This package
// only parses flags and wires packages together; it holds no logic of its own
// beyond presenting results. It uses the standard library's flag package
// (layered with SKIFF_* variables and config files by internal/flagconf)
// rather than a CLI framework, to keep the binary small and the help text plain.
//
// The client commands (get.go, apply.go, delete.go, describe.go, logs.go,
// token.go) talk to the server only through api/client and render through
// internal/printers. clientcmd.go holds what they share: the
// --client-config/--server/--token/-n flags, kubectl-style flag parsing
// (flags may follow arguments) and kubectl-style error messages
// ("Error from server (NotFound): pods \"x\" not found"). The client config
// is found as --client-config, $SKIFF_CONFIG, ~/.skiff/config.yaml,
// /var/lib/skiff/server/skiff.yaml, ./.skiff/server/skiff.yaml; --server
// and --token (or $SKIFF_SERVER, $SKIFF_TOKEN) override its fields.
// Exit codes: 0 success, 1 failure, 2 usage error.
package main
