// Package clock is skiff's one source of time. Everything that waits,
// expires or measures age takes a Clock, so tests step a Fake instead of
// sleeping. It owns no goroutines of its own except those a Real timer
// implies, and it must not import any other skiff package.
package clock
