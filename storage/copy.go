package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// CopyReport says what CopyFrom copied: the source's revision and
// compacted revision, and how many objects and change-log entries.
type CopyReport struct {
	Revision, Compacted int64
	Objects, Changes    int64
}

// CopyFrom copies one consistent snapshot of src (objects, change log,
// revision and compacted revision) into s, which must be empty (revision
// 0, no objects), in one transaction, then checks that s holds as many
// objects and changes as were read. It is how a backup of a PostgreSQL
// store is written to SQLite and how `skiff server migrate` moves a
// SQLite store to PostgreSQL. Both Stores keep serving; s's watchers, if
// any, are cut off (ErrTooSlow) since they never saw the copied history.
func (s *Store) CopyFrom(ctx context.Context, src *Store) (CopyReport, error) {
	var rep CopyReport
	if err := src.beginRead(); err != nil {
		return rep, fmt.Errorf("copy: %w", err)
	}
	defer src.endRead()
	tx, err := src.rdb.BeginTx(ctx, src.be.readTx())
	if err != nil {
		return rep, fmt.Errorf("copy: read source: %w", translate(err))
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	for _, m := range []struct {
		key string
		v   *int64
	}{{metaRevision, &rep.Revision}, {metaCompacted, &rep.Compacted}} {
		if err := tx.QueryRowContext(ctx, src.be.rebind(`SELECT value FROM meta WHERE key = ?`), m.key).Scan(m.v); err != nil {
			return rep, fmt.Errorf("copy: read source %s: %w", m.key, translate(err))
		}
	}
	err = s.submit(ctx, &op{kind: opTask, what: "copy", task: func(ctx context.Context, w *writer) error {
		s.hot.clear() // empty already: the copy goes into an empty store
		return copyRows(ctx, tx, w, &rep)
	}})
	if err != nil {
		return rep, fmt.Errorf("copy: %w", err)
	}
	s.pubMu.Lock()
	s.rev.Store(rep.Revision)
	s.raiseCompacted(rep.Compacted)
	s.missedHooks(rep.Revision)
	s.bc.skipTo(rep.Revision, fmt.Errorf("the store was replaced by a copy: %w", ErrTooSlow))
	s.pubMu.Unlock()
	return rep, s.checkCopy(ctx, rep)
}

// copyRows runs in the destination's writer: in one write transaction
// (holding the revision lock, so no other server writes meanwhile) it
// checks the destination is empty and inserts the source's rows.
func copyRows(ctx context.Context, src *sql.Tx, w *writer, rep *CopyReport) (err error) {
	rev, _, err := w.be.begin(ctx, w)
	if err != nil {
		return translate(err)
	}
	defer func() {
		if err != nil {
			w.rollback(ctx) //nolint:errcheck // the copy's error is the one to report
		}
	}()
	var objects int64
	if err := w.conn.QueryRowContext(ctx, `SELECT count(*) FROM objects`).Scan(&objects); err != nil {
		return translate(err)
	}
	if objects != 0 || rev != 0 {
		return fmt.Errorf("the destination is not empty (%d objects, revision %d): %w", objects, rev, ErrExists)
	}
	lastTs, err := copyTables(ctx, src, w, rep)
	if err != nil {
		return translate(err)
	}
	if err := w.be.commit(ctx, w, rep.Revision, lastTs); err != nil {
		return translate(err)
	}
	w.lastRev, w.lastTs = rep.Revision, max(w.lastTs, lastTs)
	return nil
}

func copyTables(ctx context.Context, src *sql.Tx, w *writer, rep *CopyReport) (lastTs int64, err error) {
	ins, err := w.conn.PrepareContext(ctx, w.be.rebind(`INSERT INTO objects (resource, namespace, name, rev, create_rev, node, labels, fields, value)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	rows, err := src.QueryContext(ctx, `SELECT resource, namespace, name, rev, create_rev, node, labels, fields, value FROM objects`)
	if err != nil {
		return 0, fmt.Errorf("read source objects: %w", err)
	}
	for rows.Next() {
		var res, ns, name, node string
		var rev, crev int64
		var lbl, fld, val []byte
		if err := rows.Scan(&res, &ns, &name, &rev, &crev, &node, &lbl, &fld, &val); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read source objects: %w", err)
		}
		if _, err := ins.ExecContext(ctx, res, ns, name, rev, crev, node, blob(lbl), blob(fld), val); err != nil {
			rows.Close()
			return 0, fmt.Errorf("write objects: %w", err)
		}
		rep.Objects++
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, fmt.Errorf("read source objects: %w", err)
	}
	insC, err := w.conn.PrepareContext(ctx, w.be.rebind(`INSERT INTO changes (rev, resource, namespace, name, type, ts, labels, fields, prev_labels, prev_fields, value)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		return 0, err
	}
	defer insC.Close()
	rows, err = src.QueryContext(ctx, `SELECT rev, resource, namespace, name, type, ts, labels, fields, prev_labels, prev_fields, value FROM changes ORDER BY rev`)
	if err != nil {
		return 0, fmt.Errorf("read source changes: %w", err)
	}
	for rows.Next() {
		var res, ns, name string
		var rev, typ, ts int64
		var lbl, fld, plbl, pfld, val []byte
		if err := rows.Scan(&rev, &res, &ns, &name, &typ, &ts, &lbl, &fld, &plbl, &pfld, &val); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read source changes: %w", err)
		}
		if _, err := insC.ExecContext(ctx, rev, res, ns, name, typ, ts, blob(lbl), blob(fld), blob(plbl), blob(pfld), val); err != nil {
			rows.Close()
			return 0, fmt.Errorf("write changes: %w", err)
		}
		lastTs = max(lastTs, ts)
		rep.Changes++
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, fmt.Errorf("read source changes: %w", err)
	}
	for _, m := range []struct {
		key string
		v   int64
	}{{metaCompacted, rep.Compacted}} {
		if _, err := w.setMeta.ExecContext(ctx, m.v, m.key); err != nil {
			return 0, fmt.Errorf("write meta: %w", err)
		}
	}
	return lastTs, nil
}

// checkCopy compares s's tables with what CopyFrom read.
func (s *Store) checkCopy(ctx context.Context, rep CopyReport) error {
	if err := s.beginRead(); err != nil {
		return fmt.Errorf("check copy: %w", err)
	}
	defer s.endRead()
	var objects, changes, rev, compacted int64
	err := s.rdb.QueryRowContext(ctx, s.be.rebind(`SELECT
		(SELECT count(*) FROM objects), (SELECT count(*) FROM changes),
		(SELECT value FROM meta WHERE key = ?), (SELECT value FROM meta WHERE key = ?)`), metaRevision, metaCompacted).
		Scan(&objects, &changes, &rev, &compacted)
	if err != nil {
		return fmt.Errorf("check copy: %w", translate(err))
	}
	got := CopyReport{Revision: rev, Compacted: compacted, Objects: objects, Changes: changes}
	if got != rep {
		return fmt.Errorf("check copy: the destination holds %+v; the source had %+v: %w", got, rep, ErrCorrupt)
	}
	return nil
}

// raiseCompacted sets the compacted revision to c unless it is already
// higher.
func (s *Store) raiseCompacted(c int64) {
	for {
		cur := s.compacted.Load()
		if c <= cur || s.compacted.CompareAndSwap(cur, c) {
			return
		}
	}
}
