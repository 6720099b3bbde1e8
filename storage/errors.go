package storage

import (
	"errors"
	"fmt"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Sentinel errors. Store methods wrap them with the operation and the key
// ("get pods/default/web: storage: not found"); branch with errors.Is.
var (
	// ErrNotFound means the object does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrExists means Create found an object with the same key.
	ErrExists = errors.New("storage: already exists")
	// ErrConflict means a resourceVersion precondition did not hold: the
	// object changed since the caller read it.
	ErrConflict = errors.New("storage: conflict")
	// ErrCompacted means a watch asked for changes older than the change log
	// keeps; the caller must list again (HTTP 410 Gone).
	ErrCompacted = errors.New("storage: revision compacted")
	// ErrTooSlow means a watcher fell more than Options.WatchBuffer events
	// behind and was cut off; the caller must watch again.
	ErrTooSlow = errors.New("storage: watcher too slow")
	// ErrClosed means the Store is closed or closing.
	ErrClosed = errors.New("storage: closed")
	// ErrCorrupt means the database file is not a valid SQLite database or
	// failed an integrity check. The file is left as it is for an operator.
	ErrCorrupt = errors.New("storage: database corrupt")
	// ErrIncompatible means the file is a valid SQLite database but not a
	// skiff one, or one written by a newer skiff with a schema this one
	// does not know.
	ErrIncompatible = errors.New("storage: not a compatible skiff database")
	// ErrLocked means another process has the database open.
	ErrLocked = errors.New("storage: database in use by another process")
	// ErrNoSpace means the disk (or the database size limit) is full. Writes
	// fail until space is freed; reads keep working.
	ErrNoSpace = errors.New("storage: no space left")
	// ErrTooLarge means an object's encoding is larger than
	// api.MaxObjectBytes; it is not stored.
	ErrTooLarge = errors.New("storage: object too large")
	// ErrInvalid means the request itself is malformed: an unknown resource,
	// an empty name, a namespace on a cluster-scoped object, an unparseable
	// resourceVersion.
	ErrInvalid = errors.New("storage: invalid request")
)

// translate maps a SQLite error to skiff's sentinels, keeping the original
// in the chain. It is the one place SQLite result codes are interpreted.
// Errors that are not SQLite errors, and SQLite errors without a skiff
// meaning, are returned unchanged.
func translate(err error) error {
	var se *sqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	default:
		return err
	}
}
