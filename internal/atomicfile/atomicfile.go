package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Create writes data to path with mode perm, failing if path exists.
// The content appears all at once: it is written to a temporary file that
// is then hard-linked into place (link, unlike rename, refuses to replace).
// On a filesystem without hard links it falls back to an O_EXCL create.
func Create(path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	// The temporary name is ours alone; failing to remove it leaves only a
	// stray dot-file, so that error does not change the outcome.
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", path, fs.ErrExist)
		}
		if err := createExclusive(path, data, perm); err != nil {
			return err
		}
	}
	return SyncDir(filepath.Dir(path))
}

// Replace writes data to path with mode perm, atomically replacing any
// existing file.
func Replace(path string, data []byte, perm fs.FileMode) error {
	tmp, err := writeTemp(path, data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp) // best effort: the rename error is the one to report
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// writeTemp writes data to a new temporary file beside path, with mode
// perm (set explicitly, so the umask does not matter), synced to disk.
func writeTemp(path string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	name := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name) // best effort: the write error is the one to report
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return name, nil
}

// createExclusive is Create's fallback for filesystems without hard
// links: not atomic, but still never replaces an existing file.
func createExclusive(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path) // the file is ours and incomplete
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}

// SyncDir makes a create or rename in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// ReplaceIfChanged is Replace, except that when path already holds
// exactly data with mode perm it writes nothing and returns false. A
// process that rewrites the same files on every start uses it so that it
// can still start on a full disk.
func ReplaceIfChanged(path string, data []byte, perm fs.FileMode) (bool, error) {
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == perm && fi.Size() == int64(len(data)) {
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
			return false, nil
		}
	}
	return true, Replace(path, data, perm)
}
