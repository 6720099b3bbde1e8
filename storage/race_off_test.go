//go:build !race

package storage_test

// raceEnabled scales heavy tests down under the race detector, which
// slows modernc's SQLite by an order of magnitude.
const raceEnabled = false
