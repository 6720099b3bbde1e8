package tlsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// File modes of what this package writes.
const (
	keyFileMode  fs.FileMode = 0o600
	certFileMode fs.FileMode = 0o644
	dirMode      fs.FileMode = 0o700
)

// readOptional returns the contents of path, or nil and no error when it
// does not exist.
func readOptional(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// exists reports whether path exists (as anything).
func exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	return true, nil
}
