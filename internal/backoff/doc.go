// Package backoff is skiff's one retry helper: capped, jittered
// exponential delays on the injected Clock, shared by every retry loop of
// the agent and the server, so that thousands of agents reconnecting to a
// restarted server spread out and no loop ever spins or waits unbounded.
// It computes and waits; it never logs and never touches the network.
package backoff
