//go:build race

package server

// raceEnabled: the race detector instruments every function, so frame
// and stack sizes are not a release build's.
const raceEnabled = true
