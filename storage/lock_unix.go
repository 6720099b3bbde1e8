//go:build unix

package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path+".lock" so that two
// processes never serve the same database: each would keep its own
// revision counter and watchers would miss the other's changes. The lock
// is released when the returned file is closed or the process dies.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s.lock: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s.lock: %w", path, err)
	}
	return f, nil
}
