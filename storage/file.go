package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// prepareFile makes sure path can be handed to SQLite: the file (whose
// directory exists) either does not exist yet (it is created empty, 0600, and
// fresh is true), is empty, or starts with the SQLite magic. Anything else
// is ErrCorrupt and the file is not touched.
func prepareFile(path string) (fresh bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = syncDir(filepath.Dir(path))
		}
		if err != nil {
			return false, fmt.Errorf("create: %w", err)
		}
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("create: %w", err)
	}
	f, err = os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() {
		return false, fmt.Errorf("not a regular file: %w", ErrCorrupt)
	}
	if st.Size() == 0 {
		// Created by an earlier Open that died before SQLite wrote to it.
		// A non-empty write-ahead log beside it means it is not new.
		if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
			return false, nil
		}
		return true, nil
	}
	head := make([]byte, len(sqliteMagic))
	if _, err := io.ReadFull(f, head); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return false, fmt.Errorf("not a SQLite database (%d bytes): %w", st.Size(), ErrCorrupt)
		}
		return false, err
	}
	if !bytes.Equal(head, []byte(sqliteMagic)) {
		return false, fmt.Errorf("not a SQLite database: %w", ErrCorrupt)
	}
	return false, nil
}

// syncDir fsyncs a directory so a file just created in it survives power
// loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// The page caches, in KiB a connection. The writer's holds what it wrote
// and is never invalidated. A reader's is emptied whenever another
// connection changed the file since its last read, which on a busy
// server is before every read: a large one only makes each read free
// what the last list filled (BenchmarkSQLiteColdReads).
var writerCacheKiB, readerCacheKiB = 16384, 1024

// dsn returns the driver name for path with the per-connection pragmas.
// Persistent settings (journal_mode, auto_vacuum) are never in the DSN so
// that opening a foreign file to inspect it cannot change it.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(0)")
	if readOnly {
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", readerCacheKiB))
	} else {
		q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", writerCacheKiB))
	}
	q.Add("_pragma", "temp_store(MEMORY)")
	// Deleted content is zeroed, so a value replaced or deleted (a
	// secret sealed again under a new key) leaves no copy in free pages.
	q.Add("_pragma", "secure_delete(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		// The WAL is truncated to this size after a checkpoint resets it.
		q.Add("_pragma", "journal_size_limit("+strconv.Itoa(journalSizeLimit)+")")
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}
	return u.String()
}

// busyTimeout is how long a connection waits for a lock. Only the
// truncating checkpoint and other processes' readers (sqlite3 CLI) contend.
const busyTimeout = 10 * time.Second

// journalSizeLimit bounds the WAL file left behind after a checkpoint.
const journalSizeLimit = 16 << 20

// removeLockFile deletes path's lock file, once the Store using it is
// closed (a backup's).
func removeLockFile(path string) error {
	if err := os.Remove(path + ".lock"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
