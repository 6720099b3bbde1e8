// Package remote holds the end-to-end suite for reaching into a remote
// box: the real kubectl 1.32 drives exec, attach, cp, port-forward and
// logs -f against a real server and a real agent with its own containerd.
//
// The agent stands for an edge box behind a firewall: its links and its
// connections to the server live in a network namespace the test makes,
// joined to the host by a veth pair on 198.18.x.0/30 (the range reserved
// for benchmarking), and nftables in that namespace drops every inbound
// connection. The server can reach the agent only through the tunnel the
// agent dialled. No traffic leaves the namespaces and links the test
// made.
//
// The package has no non-test code.
package remote
