package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// sqliteBackend keeps the Store in one SQLite file (modernc.org/sqlite,
// pure Go). One process owns the file, which it locks.
type sqliteBackend struct {
	path string
	lock *os.File
}

var _ backend = (*sqliteBackend)(nil)

func (b *sqliteBackend) kind() string           { return "sqlite" }
func (b *sqliteBackend) rebind(q string) string { return q }
func (b *sqliteBackend) containsBytes(col string) string {
	return "instr(" + col + ", ?) > 0"
}
func (b *sqliteBackend) readTx() *sql.TxOptions      { return nil }
func (b *sqliteBackend) resetAfterFailure() bool     { return false }
func (b *sqliteBackend) run(context.Context, *Store) {}

func (b *sqliteBackend) open(ctx context.Context, s *Store) (wdb, rdb *sql.DB, err error) {
	if err := os.MkdirAll(filepath.Dir(b.path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("create directory: %w", err)
	}
	lock, err := lockFile(b.path)
	if err != nil {
		return nil, nil, err
	}
	b.lock = lock
	fresh, err := prepareFile(b.path)
	if err != nil {
		return nil, nil, err
	}
	wdb, err = sql.Open("sqlite", dsn(b.path, false))
	if err != nil {
		return nil, nil, err
	}
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	if err := b.prepare(ctx, wdb, fresh); err != nil {
		wdb.Close()
		return nil, nil, err
	}
	rdb, err = sql.Open("sqlite", dsn(b.path, true))
	if err != nil {
		wdb.Close()
		return nil, nil, err
	}
	rdb.SetMaxOpenConns(s.opts.ReadConns)
	rdb.SetMaxIdleConns(s.opts.ReadConns)
	return wdb, rdb, nil
}

// prepare checks an existing file, or initialises a fresh one, on the
// writer's only connection.
func (b *sqliteBackend) prepare(ctx context.Context, wdb *sql.DB, fresh bool) error {
	conn, err := wdb.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", translate(err))
	}
	defer conn.Close()
	state := stateEmpty
	if !fresh {
		if state, err = checkDB(ctx, conn); err != nil {
			return err
		}
	}
	if state == stateEmpty {
		if err := initSchema(ctx, conn); err != nil {
			return fmt.Errorf("initialise: %w", translate(err))
		}
		return nil
	}
	return setWAL(ctx, conn)
}

func (b *sqliteBackend) begin(ctx context.Context, w *writer) (rev, lastTs int64, err error) {
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return 0, 0, err
	}
	return w.lastRev, w.lastTs, nil
}

func (b *sqliteBackend) beginMaintenance(ctx context.Context, w *writer) error {
	_, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	return err
}

func (b *sqliteBackend) commit(ctx context.Context, w *writer, rev, _ int64) error {
	if _, err := w.setMeta.ExecContext(ctx, rev, metaRevision); err != nil {
		return err
	}
	_, err := w.conn.ExecContext(ctx, "COMMIT")
	return err
}

func (b *sqliteBackend) close() error {
	if b.lock == nil {
		return nil
	}
	return b.lock.Close()
}

// shrink returns free pages to the file system a chunk at a time, then
// checkpoints and truncates the write-ahead log.
func (b *sqliteBackend) shrink(ctx context.Context, s *Store) error {
	for {
		var free int64
		err := s.submit(ctx, &op{kind: opTask, what: "vacuum", task: func(ctx context.Context, w *writer) error {
			var err error
			free, err = w.incrementalVacuum(ctx, vacuumChunk)
			return err
		}})
		if err != nil {
			return fmt.Errorf("incremental vacuum: %w", err)
		}
		if free == 0 {
			break
		}
	}
	return b.checkpoint(ctx, s)
}

// incrementalVacuum frees up to n pages and returns how many free pages
// remain. Each step of the pragma frees one page, so its rows are drained.
func (w *writer) incrementalVacuum(ctx context.Context, n int) (int64, error) {
	rows, err := w.conn.QueryContext(ctx, fmt.Sprintf("PRAGMA incremental_vacuum(%d)", n))
	if err != nil {
		return 0, translate(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		return 0, translate(err)
	}
	if err := rows.Close(); err != nil {
		return 0, translate(err)
	}
	var free int64
	if err := w.conn.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
		return 0, translate(err)
	}
	return free, nil
}

// checkpoint copies the write-ahead log into the database and truncates
// it. The copy is done first on a read connection, beside the writer
// (passiveCheckpoint); the truncation, on the writer's connection between
// transactions, then copies only what was written meanwhile. Done all on
// the writer, a checkpoint after a busy half-minute held every write for
// 2 s (a fleet's 10,000-pod Deployment).
func (b *sqliteBackend) checkpoint(ctx context.Context, s *Store) error {
	if _, _, err := b.passiveCheckpoint(ctx, s); err != nil {
		// The truncating checkpoint below copies everything anyway.
		s.log.Debug("passive checkpoint failed", "err", err)
	}
	var busy, logFrames, done int64
	err := s.submit(ctx, &op{kind: opTask, what: "checkpoint", task: func(ctx context.Context, w *writer) error {
		if _, err := w.conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", checkpointBusyTimeout.Milliseconds())); err != nil {
			return translate(err)
		}
		err := w.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done)
		if _, rerr := w.conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeout.Milliseconds())); err == nil {
			err = rerr
		}
		return translate(err)
	}})
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if busy != 0 {
		s.log.Debug("checkpoint incomplete: readers busy", "log_frames", logFrames, "checkpointed", done)
	}
	return nil
}

// passiveCheckpoint copies what it can of the write-ahead log into the
// database on a read connection (query_only does not forbid a
// checkpoint), while writes go on: SQLite's PASSIVE mode neither waits
// for nor blocks the writer or readers. It returns the log's frames and
// how many of them are now in the database.
func (b *sqliteBackend) passiveCheckpoint(ctx context.Context, s *Store) (logFrames, done int64, err error) {
	if err := s.beginRead(); err != nil {
		return 0, 0, err
	}
	defer s.endRead()
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return 0, 0, translate(err)
	}
	defer conn.Close()
	var busy int64
	err = conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logFrames, &done)
	return logFrames, done, translate(err)
}

// backup copies the database into the empty file at path with VACUUM
// INTO, on a read connection.
func (b *sqliteBackend) backup(ctx context.Context, s *Store, path string) error {
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
	_, verr := conn.ExecContext(ctx, "VACUUM INTO ?", path)
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 1"); err != nil {
		// The connection must not return to the pool writable.
		conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // only marks it bad
		return errors.Join(translate(verr), translate(err))
	}
	return translate(verr)
}
