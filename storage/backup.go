package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the store to path, a new SQLite
// file, while the Store keeps serving reads and writes (on PostgreSQL as
// on SQLite). It refuses to overwrite: path must not exist. The copy is a
// complete skiff database that Open accepts, with the same revision; it
// is fsynced before Backup returns. On failure the partial copy is
// removed.
func (s *Store) Backup(ctx context.Context, path string) (err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	// Creating the file first, exclusively, both refuses to overwrite and
	// gives the copy owner-only permissions; VACUUM INTO accepts an empty
	// file.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("backup to %s: %w", abs, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			if rerr := os.Remove(abs); rerr != nil {
				err = errors.Join(err, rerr)
			}
			err = fmt.Errorf("backup to %s: %w", abs, err)
		}
	}()
	if err := s.beginRead(); err != nil {
		return err
	}
	defer s.endRead()
	if err := s.be.backup(ctx, s, abs); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(abs))
}
