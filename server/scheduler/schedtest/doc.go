// Package schedtest holds fixtures for the scheduler's tests and
// benchmarks: terse builders for nodes and pods. It is for tests only and
// must not be imported by production code.
package schedtest
