package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

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
	// ErrUnavailable means the datastore cannot be reached or refused the
	// connection (PostgreSQL down, restarting, or the network cut): the
	// operation did not happen, or for a write whose commit was cut off,
	// may have happened. Retry later (HTTP 503).
	ErrUnavailable = errors.New("storage: datastore unavailable")
	// ErrTooLarge means an object's encoding is larger than
	// api.MaxObjectBytes; it is not stored.
	ErrTooLarge = errors.New("storage: object too large")
	// ErrInvalid means the request itself is malformed: an unknown resource,
	// an empty name, a namespace on a cluster-scoped object, an unparseable
	// resourceVersion.
	ErrInvalid = errors.New("storage: invalid request")
)

// translate maps a database error to skiff's sentinels, keeping the
// original in the chain. It is the one place SQLite result codes and
// PostgreSQL SQLSTATEs are interpreted. Errors without a skiff meaning are
// returned unchanged; a deadline stays context.DeadlineExceeded.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("%w: %w", ErrNoSpace, err)
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return err
	}
	return translatePostgres(err)
}

// translatePostgres maps pgx and PostgreSQL errors.
func translatePostgres(err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100": // disk_full
			return fmt.Errorf("%w: %w", ErrNoSpace, err)
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // shutdown, crash, cannot connect now
			pe.Code == "53300": // too many connections
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		case pe.Code == "XX001", pe.Code == "XX002": // data or index corrupted
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return err
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	if errors.As(err, &ce) || errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}
