// Package supervise runs a process's long-running loops and turns the
// first fatal error among them into the process's result. `skiff agent`
// and `skiff server` build one Group each in their run function: every
// loop is a `Run(ctx) error` started with Go, the first loop that fails
// cancels the others, and Wait returns that error, named after the loop,
// for main to print and exit non-zero with. It owns no loop itself and
// logs nothing but the shutdown noise of loops that fail after the end
// began.
package supervise
