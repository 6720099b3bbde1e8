//go:build !unix

package storage

import "os"

// lockFile is a no-op where flock is unavailable; the caller must make sure
// only one process opens the database.
func lockFile(path string) (*os.File, error) { return nil, nil }
