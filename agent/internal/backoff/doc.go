// Package backoff computes the agent's retry delays: exponential with
// jitter, so that thousands of agents reconnecting to a restarted server
// spread out. It only computes durations; callers wait on their own
// clock.
package backoff
