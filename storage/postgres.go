package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgBackend keeps the Store in a PostgreSQL database that several
// servers share, through pgx (pure Go). The tables are SQLite's: live
// objects plus the change log.
//
// Revisions stay gap-free and in commit order across servers: a write
// transaction starts by locking the meta rows holding the revision and
// the last change timestamp (SELECT ... FOR UPDATE), so transactions that
// assign revisions commit one after another, each seeing the one before.
// Group commit stays per server: the writer goroutine still commits its
// batch in one transaction. Each commit sends NOTIFY skiff_changes; every
// Store LISTENs and reads the change log from its last published
// revision when woken, and every PollInterval in case a notification was
// lost (a dropped listening connection).
type pgBackend struct {
	url string
	cfg *pgx.ConnConfig
}

var _ backend = (*pgBackend)(nil)

// pgChannel is the LISTEN/NOTIFY channel commits are announced on.
const pgChannel = "skiff_changes"

// pgInitLock is the advisory lock key servers take while initialising
// the schema, so two starting at once do not both create it.
const pgInitLock = 0x534b4946

func (b *pgBackend) kind() string           { return "postgres" }
func (b *pgBackend) rebind(q string) string { return rebindDollar(q) }
func (b *pgBackend) containsBytes(col string) string {
	return "position(?::bytea in " + col + ") > 0"
}
func (b *pgBackend) resetAfterFailure() bool { return true }

func (b *pgBackend) readTx() *sql.TxOptions {
	return &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
}

func (b *pgBackend) open(ctx context.Context, s *Store) (wdb, rdb *sql.DB, err error) {
	b.cfg, err = pgx.ParseConfig(b.url)
	if err != nil {
		return nil, nil, fmt.Errorf("parse URL: %w", err)
	}
	wdb = stdlib.OpenDB(*b.cfg)
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	if err := pgInit(ctx, wdb); err != nil {
		wdb.Close()
		return nil, nil, err
	}
	// Lists sort in memory even before the planner has statistics (a
	// fresh table) and picks the primary-key order.
	rcfg := b.cfg.Copy()
	rcfg.RuntimeParams["work_mem"] = "32MB"
	rdb = stdlib.OpenDB(*rcfg)
	rdb.SetMaxOpenConns(s.opts.ReadConns)
	rdb.SetMaxIdleConns(s.opts.ReadConns)
	return wdb, rdb, nil
}

// pgSchema is schema (schema.go) in PostgreSQL's types. Text columns use
// the C collation so lists come back in SQLite's (byte) order whatever
// the database's default. meta also holds the marks SQLite keeps in
// PRAGMAs (application_id, schema_version) and the last change's
// timestamp, which writers on other servers need.
const pgSchema = `
CREATE TABLE meta (
	key   TEXT COLLATE "C" PRIMARY KEY,
	value BIGINT NOT NULL
);

CREATE TABLE objects (
	resource   TEXT COLLATE "C" NOT NULL,
	namespace  TEXT COLLATE "C" NOT NULL,
	name       TEXT COLLATE "C" NOT NULL,
	rev        BIGINT NOT NULL,
	create_rev BIGINT NOT NULL,
	node       TEXT COLLATE "C" NOT NULL DEFAULT '',
	labels     BYTEA,
	fields     BYTEA,
	value      BYTEA NOT NULL,
	PRIMARY KEY (resource, namespace, name)
);
CREATE INDEX objects_node ON objects (resource, node, namespace, name) WHERE node <> '';

CREATE TABLE changes (
	rev         BIGINT PRIMARY KEY,
	resource    TEXT COLLATE "C" NOT NULL,
	namespace   TEXT COLLATE "C" NOT NULL,
	name        TEXT COLLATE "C" NOT NULL,
	type        INTEGER NOT NULL,
	ts          BIGINT NOT NULL,
	labels      BYTEA,
	fields      BYTEA,
	prev_labels BYTEA,
	prev_fields BYTEA,
	value       BYTEA NOT NULL
);

CREATE TABLE leases (
	name    TEXT COLLATE "C" PRIMARY KEY,
	holder  TEXT NOT NULL,
	epoch   BIGINT NOT NULL,
	expires TIMESTAMPTZ NOT NULL
);

CREATE TABLE blobs (
	name  TEXT COLLATE "C" PRIMARY KEY,
	value BYTEA NOT NULL
);

CREATE TABLE liveness (
	node TEXT COLLATE "C" PRIMARY KEY,
	last BIGINT NOT NULL
);
`

// Meta keys kept only on PostgreSQL.
const (
	metaAppID   = "application_id"
	metaVersion = "schema_version"
	metaLastTs  = "lastts"
)

// pgInit creates the tables in an empty database, or checks that the
// existing ones are skiff's and of a schema this binary knows.
func pgInit(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", translate(err))
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(pgInitLock)); err != nil {
		return fmt.Errorf("lock for initialisation: %w", translate(err))
	}
	var meta, objects, changes bool
	err = tx.QueryRowContext(ctx, `SELECT to_regclass('meta') IS NOT NULL, to_regclass('objects') IS NOT NULL, to_regclass('changes') IS NOT NULL`).
		Scan(&meta, &objects, &changes)
	if err != nil {
		return fmt.Errorf("read schema: %w", translate(err))
	}
	if !meta {
		if objects || changes {
			return fmt.Errorf("tables objects or changes exist without meta: %w", ErrIncompatible)
		}
		if _, err := tx.ExecContext(ctx, pgSchema); err != nil {
			return fmt.Errorf("create tables: %w", translate(err))
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ($1, $2), ($3, $4), ($5, 0), ($6, 0), ($7, 0)`,
			metaAppID, int64(applicationID), metaVersion, int64(schemaVersion), metaRevision, metaCompacted, metaLastTs); err != nil {
			return fmt.Errorf("create tables: %w", translate(err))
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("create tables: %w", translate(err))
		}
		return nil
	}
	var appID, version int64
	err = tx.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT value FROM meta WHERE key = $1), 0),
		COALESCE((SELECT value FROM meta WHERE key = $2), 0)`, metaAppID, metaVersion).Scan(&appID, &version)
	if err != nil {
		return fmt.Errorf("read meta: %w: %w", ErrIncompatible, translate(err))
	}
	switch {
	case appID != applicationID:
		return fmt.Errorf("application_id %#x is not skiff's: %w", appID, ErrIncompatible)
	case version > schemaVersion:
		return fmt.Errorf("schema version %d is newer than this skiff's %d: %w", version, schemaVersion, ErrIncompatible)
	case version < 1:
		return fmt.Errorf("schema version %d is unknown: %w", version, ErrIncompatible)
	}
	return nil
}

// pgLockMeta locks the revision and last-timestamp rows and reads them.
// In READ COMMITTED a row lock that had to wait returns the row as the
// transaction that held it committed it, so the values are the newest.
// ORDER BY fixes the order the rows are locked in.
const pgLockMeta = `SELECT key, value FROM meta WHERE key IN ('lastts', 'revision') ORDER BY key FOR UPDATE`

func (b *pgBackend) begin(ctx context.Context, w *writer) (rev, lastTs int64, err error) {
	if _, err := w.conn.ExecContext(ctx, "BEGIN"); err != nil {
		return 0, 0, err
	}
	rows, err := w.conn.QueryContext(ctx, pgLockMeta)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			return 0, 0, err
		}
		switch k {
		case metaRevision:
			rev = v
		case metaLastTs:
			lastTs = v
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	if n != 2 {
		return 0, 0, fmt.Errorf("meta has %d of the revision rows: %w", n, ErrCorrupt)
	}
	return rev, lastTs, nil
}

func (b *pgBackend) beginMaintenance(ctx context.Context, w *writer) error {
	_, err := w.conn.ExecContext(ctx, "BEGIN")
	return err
}

// commit records the revision and timestamp, announces the commit and
// commits, in one round trip: the simple query protocol takes several
// statements, and the numbers are formatted here, not user input.
func (b *pgBackend) commit(ctx context.Context, w *writer, rev, ts int64) error {
	r, t := strconv.FormatInt(rev, 10), strconv.FormatInt(ts, 10)
	q := `UPDATE meta SET value = CASE key WHEN 'revision' THEN ` + r + ` ELSE ` + t + ` END WHERE key IN ('lastts', 'revision');
NOTIFY ` + pgChannel + `, '` + r + `';
COMMIT`
	_, err := w.conn.ExecContext(ctx, q)
	return err
}

func (b *pgBackend) shrink(context.Context, *Store) error {
	// PostgreSQL's autovacuum makes the space of deleted change-log rows
	// reusable; the table stays proportional to the retained history.
	return nil
}

func (b *pgBackend) checkpoint(context.Context, *Store) error { return nil }

func (b *pgBackend) close() error { return nil }

// backup copies one snapshot of the database into a new SQLite file.
func (b *pgBackend) backup(ctx context.Context, s *Store, path string) error {
	dst, err := Open(ctx, Options{Path: path, CompactInterval: -1, CheckpointInterval: -1, Clock: s.clock})
	if err != nil {
		return err
	}
	_, cerr := dst.CopyFrom(ctx, s)
	err = errors.Join(cerr, dst.Close())
	return errors.Join(err, removeLockFile(path))
}
