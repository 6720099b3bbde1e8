// Package podclean holds helpers for tests that run a real skiff agent
// on a containerd of their own: cleaning up what the agent's pods leave
// behind, since an agent leaves its pods running when it stops, by
// design. It is imported only by tests and test harnesses.
package podclean
