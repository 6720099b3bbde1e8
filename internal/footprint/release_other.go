//go:build !linux

package footprint

// ReleaseStartupPages does nothing off Linux.
func ReleaseStartupPages() (int64, error) { return 0, nil }
