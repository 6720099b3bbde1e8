// Command skiff is the single binary of skiff: `skiff server` (control
// plane), `skiff agent` (node agent) and the client commands. This package
// only parses flags and wires packages together; it holds no logic of its own
// beyond presenting results. It uses the standard library's flag package
// (layered with SKIFF_* variables and config files by internal/flagconf)
// rather than a CLI framework, to keep the binary small and the help text plain.
package main
