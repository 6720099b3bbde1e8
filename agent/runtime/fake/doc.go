// Package fake is an in-memory runtime.Runtime for the agent's unit tests.
// It records every call, keeps images, sandboxes and containers in maps,
// moves containers through created → running → exited under the test's
// control (Exit), fails any method on demand (SetError, SetPullError) and
// streams lifecycle events. Time comes from an injected clock, so grace
// periods pass only when a test steps a clock.Fake. It must not be used
// outside tests and touches nothing on the host.
package fake
