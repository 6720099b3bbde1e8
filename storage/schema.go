package storage

import (
	"context"
	"database/sql"
	"fmt"
)

// applicationID marks a SQLite file as skiff's ("SKIF"); a file with any
// other non-zero application_id is refused.
const applicationID = 0x534b4946

// schemaVersion is PRAGMA user_version of the schema below. A file with a
// larger user_version was written by a newer skiff and is refused.
const schemaVersion = 1

// Meta keys.
const (
	metaRevision  = "revision"  // last committed revision
	metaCompacted = "compacted" // changes at or below it are gone
)

// schema creates the tables in one transaction with application_id and
// user_version, so a crash leaves either no tables or all of them.
//
// objects holds live objects: one row per key, value is the object's JSON
// with metadata.resourceVersion = rev. It is a rowid table with a unique
// index rather than WITHOUT ROWID because values are ~1-4 KiB and such rows
// would overflow an index b-tree page.
//
// changes is the append-only change log, rev = revision. labels/fields are
// the object's after the change (before it, for a deletion); prev_labels and
// prev_fields are those before the change, NULL when equal to labels/fields
// or when there was no object. type is an EventType.
//
// node is spec.nodeName for pods (empty otherwise), indexed because agents
// list and watch their node's pods.
const schema = `
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE objects (
	resource   TEXT NOT NULL,
	namespace  TEXT NOT NULL,
	name       TEXT NOT NULL,
	rev        INTEGER NOT NULL,
	create_rev INTEGER NOT NULL,
	node       TEXT NOT NULL DEFAULT '',
	labels     BLOB,
	fields     BLOB,
	value      BLOB NOT NULL
);
CREATE UNIQUE INDEX objects_key ON objects (resource, namespace, name);
CREATE INDEX objects_node ON objects (resource, node, namespace, name) WHERE node <> '';

CREATE TABLE changes (
	rev         INTEGER PRIMARY KEY,
	resource    TEXT NOT NULL,
	namespace   TEXT NOT NULL,
	name        TEXT NOT NULL,
	type        INTEGER NOT NULL,
	ts          INTEGER NOT NULL,
	labels      BLOB,
	fields      BLOB,
	prev_labels BLOB,
	prev_fields BLOB,
	value       BLOB NOT NULL
);

INSERT INTO meta (key, value) VALUES ('revision', 0), ('compacted', 0);
`

// pageSize is a new database's page size, in bytes: SQLite's default,
// set explicitly. 16 KiB pages made a placement's batches a quarter of
// the system calls, but a fleet's status writes land on pages all over
// the table, and each dirty page is a whole frame in the write-ahead log:
// random status writes were 26 % slower (BenchmarkSQLiteRandomStatus), and
// two fleet placements took 34-40 s against 23-26 s (docs/benchmarks.md,
// "Fleet, round fourteen"). A variable only so that the benchmarks can
// compare.
var pageSize = 4096

// initSchema turns an empty database into a skiff database. page_size
// and auto_vacuum must be set before the first table exists, and
// journal_mode=WAL is persistent; all three are set here and nowhere
// else.
func initSchema(ctx context.Context, c *sql.Conn) error {
	if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", pageSize)); err != nil {
		return fmt.Errorf("set page_size: %w", err)
	}
	if _, err := c.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return fmt.Errorf("set auto_vacuum: %w", err)
	}
	if err := setWAL(ctx, c); err != nil {
		return err
	}
	var av int
	if err := c.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&av); err != nil {
		return fmt.Errorf("read auto_vacuum: %w", err)
	}
	if av != 2 {
		// The file already had a first page (an interrupted earlier
		// init); VACUUM applies the setting to an empty database cheaply.
		if _, err := c.ExecContext(ctx, "VACUUM"); err != nil {
			return fmt.Errorf("vacuum to enable auto_vacuum: %w", err)
		}
	}
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
		return fmt.Errorf("set application_id: %w", err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return fmt.Errorf("set user_version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// setWAL switches the database to write-ahead logging (persistent) and
// fails if SQLite cannot, for instance without shared memory.
func setWAL(ctx context.Context, c *sql.Conn) error {
	var mode string
	if err := c.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
		return fmt.Errorf("set journal_mode: %w", translate(err))
	}
	if mode != "wal" {
		return fmt.Errorf("journal_mode is %q and cannot be set to wal", mode)
	}
	return nil
}

// dbState is what checkDB learned about an existing database.
type dbState int

const (
	stateEmpty dbState = iota // no tables: initialise it
	stateReady                // a skiff database of this schema version
)

// checkDB decides whether the database behind c is one this Store may
// use, without writing to it. It refuses foreign SQLite files, future
// schemas and files that fail PRAGMA quick_check.
func checkDB(ctx context.Context, c *sql.Conn) (dbState, error) {
	var appID, version, tables int64
	if err := c.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return 0, fmt.Errorf("read application_id: %w", translate(err))
	}
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, fmt.Errorf("read user_version: %w", translate(err))
	}
	if err := c.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
		return 0, fmt.Errorf("read schema: %w", translate(err))
	}
	switch {
	case appID == 0 && version == 0 && tables == 0:
		return stateEmpty, nil
	case appID != applicationID:
		return 0, fmt.Errorf("application_id %#x is not skiff's: %w", appID, ErrIncompatible)
	case version > schemaVersion:
		return 0, fmt.Errorf("schema version %d is newer than this skiff's %d: %w", version, schemaVersion, ErrIncompatible)
	case version < 1:
		return 0, fmt.Errorf("schema version %d is unknown: %w", version, ErrIncompatible)
	}
	rows, err := c.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		return 0, fmt.Errorf("quick_check: %w", translate(err))
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return 0, fmt.Errorf("quick_check: %w", translate(err))
		}
		if s != "ok" && len(problems) < 5 {
			if len(s) > 200 {
				s = s[:200] + "..."
			}
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("quick_check: %w", translate(err))
	}
	if len(problems) > 0 {
		return 0, fmt.Errorf("quick_check: %q: %w", problems, ErrCorrupt)
	}
	return stateReady, nil
}
