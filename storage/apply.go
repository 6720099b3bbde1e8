package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
)

// writer holds the writer connection and its prepared statements. Only
// the writer goroutine uses it (and Open, before that goroutine starts).
type writer struct {
	be      backend
	db      *sql.DB              // the pool conn comes from
	conn    *sql.Conn            // nil while disconnected
	lastRev int64                // the last revision this writer committed or loaded
	lastTs  int64                // ts of the last change; ts never goes backwards
	seal    sealing              // applied to values as they go to and come from the database
	claims  map[string]ClaimFunc // Options.Claims: resources whose writes maintain claims

	selObj, selObjValue, insObj, updObj, delObj *sql.Stmt
	insChange, setMeta, raiseMeta, getMeta      *sql.Stmt
	delChanges                                  *sql.Stmt
}

// newWriter takes a connection from db and prepares the writer's
// statements on it.
func newWriter(ctx context.Context, db *sql.DB, be backend) (*writer, error) {
	w := &writer{be: be, db: db}
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// connect takes a new connection from the pool and prepares the
// statements on it; on error it leaves w without a connection.
func (w *writer) connect(ctx context.Context) error {
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", translate(err))
	}
	w.conn = conn
	for _, p := range []struct {
		stmt **sql.Stmt
		q    string
	}{
		{&w.selObj, `SELECT rev, labels, fields FROM objects WHERE resource = ? AND namespace = ? AND name = ?`},
		{&w.selObjValue, `SELECT rev, labels, fields, value FROM objects WHERE resource = ? AND namespace = ? AND name = ?`},
		{&w.insObj, `INSERT INTO objects (resource, namespace, name, rev, create_rev, node, labels, fields, value)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (resource, namespace, name) DO NOTHING`},
		{&w.updObj, `UPDATE objects SET rev = ?, node = ?, labels = ?, fields = ?, value = ?
			WHERE resource = ? AND namespace = ? AND name = ?`},
		{&w.delObj, `DELETE FROM objects WHERE resource = ? AND namespace = ? AND name = ?`},
		{&w.insChange, `INSERT INTO changes (rev, resource, namespace, name, type, ts, labels, fields, prev_labels, prev_fields, value)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&w.setMeta, `UPDATE meta SET value = ? WHERE key = ?`},
		{&w.raiseMeta, `UPDATE meta SET value = ? WHERE key = ? AND value < ?`},
		{&w.getMeta, `SELECT value FROM meta WHERE key = ?`},
		{&w.delChanges, `DELETE FROM changes WHERE rev <= ?`},
	} {
		st, err := conn.PrepareContext(ctx, w.be.rebind(p.q))
		if err != nil {
			w.disconnect()
			return fmt.Errorf("prepare: %w", translate(err))
		}
		*p.stmt = st
	}
	return nil
}

// disconnect closes the statements and drops the connection from the
// pool for good (it may be broken), leaving w to connect again.
func (w *writer) disconnect() {
	if w.conn == nil {
		return
	}
	w.closeStmts()                                           //nolint:errcheck // the connection is being discarded
	w.conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // only marks it bad
	w.conn.Close()                                           //nolint:errcheck // as above
	w.conn = nil
}

// load reads the revision counters and the newest change's timestamp, in
// one statement so that they come from one snapshot: on PostgreSQL
// another server may commit between two statements, and a revision read
// before its commit next to a change log read after it looked like
// corruption (a second server refused to start while the first wrote).
func (w *writer) load(ctx context.Context) (rev, compacted, lastTs int64, err error) {
	q := w.be.rebind(`SELECT
		(SELECT value FROM meta WHERE key = ?),
		(SELECT value FROM meta WHERE key = ?),
		COALESCE((SELECT MAX(rev) FROM changes), 0),
		COALESCE((SELECT ts FROM changes ORDER BY rev DESC LIMIT 1), 0)`)
	var last int64
	var revN, compactedN sql.NullInt64
	if err := w.conn.QueryRowContext(ctx, q, metaRevision, metaCompacted).Scan(&revN, &compactedN, &last, &lastTs); err != nil {
		return 0, 0, 0, fmt.Errorf("read revision counters: %w", translate(err))
	}
	if !revN.Valid || !compactedN.Valid {
		return 0, 0, 0, fmt.Errorf("read revision counters: meta rows missing: %w", ErrCorrupt)
	}
	rev, compacted = revN.Int64, compactedN.Int64
	if last > rev {
		return 0, 0, 0, fmt.Errorf("change log at revision %d is ahead of the recorded %d: %w", last, rev, ErrCorrupt)
	}
	return rev, compacted, lastTs, nil
}

func (w *writer) closeStmts() error {
	var errs []error
	for _, st := range []**sql.Stmt{&w.selObj, &w.selObjValue, &w.insObj, &w.updObj, &w.delObj, &w.insChange, &w.setMeta, &w.raiseMeta, &w.getMeta, &w.delChanges} {
		if *st != nil {
			errs = append(errs, (*st).Close())
			*st = nil
		}
	}
	return errors.Join(errs...)
}

func (w *writer) close() error {
	if w.conn == nil {
		return nil
	}
	err := errors.Join(w.closeStmts(), w.conn.Close())
	w.conn = nil
	return err
}

func (w *writer) rollback(ctx context.Context) error {
	_, err := w.conn.ExecContext(ctx, "ROLLBACK")
	return err
}

// apply runs one op at revision rev inside the open transaction. opErr is
// a failed precondition (nothing was written); err is an SQL failure.
func (w *writer) apply(ctx context.Context, o *op, rev, ts int64) (c *change, opErr, err error) {
	switch o.kind {
	case opCreate:
		return w.create(ctx, o, rev, ts)
	case opUpdate:
		return w.update(ctx, o, rev, ts)
	case opDelete:
		return w.delete(ctx, o, rev, ts)
	}
	return nil, fmt.Errorf("unknown op kind %d", o.kind), nil
}

func (w *writer) create(ctx context.Context, o *op, rev, ts int64) (*change, error, error) {
	e, k := o.enc, o.enc.key
	value := e.withRevision(rev)
	stored, err := w.seal.seal(k.resource, value)
	if err != nil {
		return nil, err, nil
	}
	if len(e.claims) > 0 {
		if opErr, err := w.checkClaims(ctx, k, e.claims); opErr != nil || err != nil {
			return nil, opErr, err
		}
	}
	res, err := w.insObj.ExecContext(ctx, k.resource, k.namespace, k.name, rev, rev, e.node, blob(e.labels), e.fields, stored)
	if err != nil {
		return nil, nil, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, nil, err
	} else if n == 0 {
		return nil, ErrExists, nil
	}
	if w.claims[k.resource] != nil {
		if err := w.setClaims(ctx, k, e.claims); err != nil {
			return nil, nil, err
		}
	}
	if err := w.logChange(ctx, rev, k, Added, ts, e.labels, e.fields, nil, nil, stored); err != nil {
		return nil, nil, err
	}
	o.rev, o.value = rev, value
	return &change{
		rev: rev, typ: Added, key: k, info: e.info, ts: ts, value: value,
		rawLabels: e.labels, rawFields: e.fields,
		haveSets: true, labels: e.labelSet, fields: e.fieldSet,
	}, nil, nil
}

func (w *writer) update(ctx context.Context, o *op, rev, ts int64) (*change, error, error) {
	e, k := o.enc, o.enc.key
	var cur int64
	var oldLabels, oldFields []byte
	err := w.selObj.QueryRowContext(ctx, k.resource, k.namespace, k.name).Scan(&cur, &oldLabels, &oldFields)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if o.precond != 0 && o.precond != cur {
		if o.current {
			err = w.fetchCurrent(ctx, o)
		}
		return nil, conflict(o.precond, cur), err
	}
	value := e.withRevision(rev)
	stored, err := w.seal.seal(k.resource, value)
	if err != nil {
		return nil, err, nil
	}
	if len(e.claims) > 0 {
		if opErr, err := w.checkClaims(ctx, k, e.claims); opErr != nil || err != nil {
			return nil, opErr, err
		}
	}
	if _, err := w.updObj.ExecContext(ctx, rev, e.node, blob(e.labels), e.fields, stored, k.resource, k.namespace, k.name); err != nil {
		return nil, nil, err
	}
	if w.claims[k.resource] != nil {
		if err := w.setClaims(ctx, k, e.claims); err != nil {
			return nil, nil, err
		}
	}
	prevLabels, prevFields := prevColumn(oldLabels, e.labels), prevColumn(oldFields, e.fields)
	if err := w.logChange(ctx, rev, k, Modified, ts, e.labels, e.fields, prevLabels, prevFields, stored); err != nil {
		return nil, nil, err
	}
	o.rev, o.value = rev, value
	return &change{
		rev: rev, typ: Modified, key: k, info: e.info, ts: ts, value: value,
		rawLabels: e.labels, rawFields: e.fields, rawPrevLabels: prevLabels, rawPrevFields: prevFields,
		haveSets: true, labels: e.labelSet, fields: e.fieldSet,
	}, nil, nil
}

func (w *writer) delete(ctx context.Context, o *op, rev, ts int64) (*change, error, error) {
	k := o.key
	var cur int64
	var lbl, fld, old []byte
	err := w.selObjValue.QueryRowContext(ctx, k.resource, k.namespace, k.name).Scan(&cur, &lbl, &fld, &old)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if old, err = w.seal.unseal(k.resource, old); err != nil {
		return nil, err, nil
	}
	if o.precond != 0 && o.precond != cur {
		o.cur, o.curRev = old, cur
		return nil, conflict(o.precond, cur), nil
	}
	value, rerr := restamp(old, cur, rev)
	if rerr != nil {
		return nil, rerr, nil
	}
	stored, err := w.seal.seal(k.resource, value)
	if err != nil {
		return nil, err, nil
	}
	if _, err := w.delObj.ExecContext(ctx, k.resource, k.namespace, k.name); err != nil {
		return nil, nil, err
	}
	if w.claims[k.resource] != nil {
		if err := w.setClaims(ctx, k, nil); err != nil {
			return nil, nil, err
		}
	}
	if err := w.logChange(ctx, rev, k, Deleted, ts, lbl, fld, nil, nil, stored); err != nil {
		return nil, nil, err
	}
	o.rev, o.value = rev, value
	return &change{
		rev: rev, typ: Deleted, key: k, info: o.info, ts: ts, value: value,
		rawLabels: lbl, rawFields: fld,
	}, nil, nil
}

// fetchCurrent loads the current value into o so GuaranteedUpdate can
// retry without another read.
func (w *writer) fetchCurrent(ctx context.Context, o *op) error {
	k := o.enc.key
	var lbl, fld []byte
	if err := w.selObjValue.QueryRowContext(ctx, k.resource, k.namespace, k.name).Scan(&o.curRev, &lbl, &fld, &o.cur); err != nil {
		return err
	}
	var err error
	o.cur, err = w.seal.unseal(k.resource, o.cur)
	return err
}

func (w *writer) logChange(ctx context.Context, rev int64, k key, t EventType, ts int64, lbl, fld, prevLbl, prevFld, value []byte) error {
	_, err := w.insChange.ExecContext(ctx, rev, k.resource, k.namespace, k.name, int64(t), ts,
		blob(lbl), blob(fld), blob(prevLbl), blob(prevFld), value)
	return err
}

// conflict explains a failed resourceVersion precondition.
func conflict(want, have int64) error {
	return fmt.Errorf("resourceVersion %d is not the current %d: %w", want, have, ErrConflict)
}

// prevColumn is the prev_labels/prev_fields value: nil when unchanged,
// "{}" for none, else the old JSON.
func prevColumn(old, now []byte) []byte {
	switch {
	case string(old) == string(now):
		return nil
	case len(old) == 0:
		return []byte("{}")
	}
	return old
}

// blob binds nil as SQL NULL.
func blob(b []byte) any {
	if b == nil {
		return nil
	}
	return b
}

// formatRevision renders a revision as a resourceVersion.
func formatRevision(rev int64) string { return strconv.FormatInt(rev, 10) }
