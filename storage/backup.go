package storage

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database to path while the Store
// keeps serving reads and writes. It refuses to overwrite: path must not
// exist. The copy is a complete skiff database that Open accepts; it is
// fsynced before Backup returns. On failure the partial copy is removed.
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
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return translate(err)
	}
	defer conn.Close()
	// VACUUM INTO writes a new file, which query_only forbids; lift it on
	// this connection only for the copy.
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 0"); err != nil {
		return translate(err)
	}
	_, verr := conn.ExecContext(ctx, "VACUUM INTO ?", abs)
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		// The connection must not return to the pool writable.
		conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // only marks it bad
		return errors.Join(translate(verr), translate(err))
	}
	if verr != nil {
		return translate(verr)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(abs))
}
