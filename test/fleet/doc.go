// Package fleet is the fleet simulator: many simulated agents against one
// real `skiff server` child process, to measure and prove the server at
// fleet scale.
//
// Each simulated agent runs the agent's own client code paths with no
// containerd behind them: node.JoinRetry joins with the join token (over
// TLS, pinning the CA from the token's hash, retried with the agent's
// back-off), node.Registrar registers the Node and heartbeats every 10 s
// with jitter, config.APISource holds the assignment stream (list, then
// watch; reconnects with its own back-off) and status.Manager writes each
// delivered pod's Running status. Only the kubelet is replaced: the
// simulated one answers every pod it is given with Running at once.
// With Full (fleetsim -full, the default) each agent also holds the real
// agent's other connections, with its code: the pod network's peer feed
// (network.PeerWatcher), the service proxy's Service and EndpointSlice
// watches (proxy.Watcher) and the tunnel (streaming.Client), whose sinks
// only count. Without it an agent is as light as in the rounds before
// 2026-12-03, which is why those rounds' figures are per pod-watching
// agent, not per real agent.
//
// Every agent dials the server from a source address of its own in
// 127.0.0.0/8 (127.b.c.d), as separate machines would, so per-address
// limits (join attempts, failed authentications) see one address per
// agent. Every connection goes to loopback only.
//
// Run is the whole measured scenario (join N agents, steady heartbeats,
// direct binds, a Deployment spread by zone over every node, server
// restarts); ./fleetsim is its command and `make fleet AGENTS=10000` runs
// it. The package's test runs a small fleet through the same steps with
// no speed assertions. Besides the timings it reports where the server's
// memory was after the join and at the steady window's end (the Go
// runtime's figures from the /metrics it reads around each phase), and
// times the Deployment both by the agents' arrivals and by one admin
// watch that reads only each pod's name, node and phase (podWatch), so
// that the measuring stays light beside a starved fleet.
//
// The simulator's heap for 10,000 agents is over a gigabyte, and one of
// its collections stalls every simulated agent at once, which no fleet of
// agent processes does. So it collects between phases
// (Config.CollectBetween) and holds its collector inside a measured phase
// (Config.HoldOwnGC), reporting the collections that ran in each. Before
// the settle and steady window it holds its collector without collecting
// first: the stall of a collection bunches the agents' heartbeats (each is
// scheduled from the last one heard) for the minutes after it.
//
// stackhist/build.sh builds a measurement-only server whose pprof
// address also lists the goroutines by where they started and the size
// of their stacks (the runtime has no API for it, so the build adds one
// with go build -overlay).
package fleet
