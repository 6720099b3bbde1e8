// Package checkpoint keeps the agent's desired API pods on local disk
// (<data-dir>/agent/checkpoint/pods.json), so that after a restart the
// agent runs them again before the server answers (RESTORE). It owns only
// that file; it neither reads the server nor touches containers.
package checkpoint
