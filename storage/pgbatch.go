package storage

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// On PostgreSQL a batch costs round trips, not fsyncs: applying op by op
// would read and write each object in turn. Instead the writer reads the
// current rows of every key in the batch with one query, decides every
// op in memory (exactly as applyEach does with its reads: preconditions,
// existence, revisions), and sends all the writes in one pipeline. The
// revision lock taken by begin keeps every other writer out meanwhile,
// so the rows read are the rows written over; a write that does not
// affect exactly one row is a database failure that fails the batch.

const (
	pgPrefetch = `SELECT o.resource, o.namespace, o.name, o.rev, o.labels, o.fields, o.value
		FROM objects o JOIN unnest($1::text[], $2::text[], $3::text[]) AS k (resource, namespace, name)
		ON o.resource = k.resource AND o.namespace = k.namespace AND o.name = k.name`
	pgInsObj = `INSERT INTO objects (resource, namespace, name, rev, create_rev, node, labels, fields, value)
		VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8)`
	pgUpdObj = `UPDATE objects SET rev = $1, node = $2, labels = $3, fields = $4, value = $5
		WHERE resource = $6 AND namespace = $7 AND name = $8`
	pgDelObj    = `DELETE FROM objects WHERE resource = $1 AND namespace = $2 AND name = $3`
	pgInsChange = `INSERT INTO changes (rev, resource, namespace, name, type, ts, labels, fields, prev_labels, prev_fields, value)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
)

// rowState is an object's row as the batch sees it.
type rowState struct {
	rev                   int64
	labels, fields, value []byte
}

// applyPipelined applies ops on top of revision base inside the open
// transaction: it returns the committed-to-be changes and the last
// revision. Ops that fail a precondition get o.err; err is a database
// failure.
func (w *writer) applyPipelined(ctx context.Context, ops []*op, base, ts int64) ([]*change, int64, error) {
	st, err := w.prefetch(ctx, ops)
	if err != nil {
		return nil, 0, err
	}
	rev := base
	var b pgx.Batch
	changes := make([]*change, 0, len(ops))
	for _, o := range ops {
		if o.err != nil {
			continue // fenced
		}
		if cerr := o.ctx.Err(); cerr != nil {
			o.err = cerr
			continue
		}
		r := rev + 1
		var c *change
		switch o.kind {
		case opCreate:
			e, k := o.enc, o.enc.key
			if _, ok := st[k]; ok {
				o.err = ErrExists
				continue
			}
			value := e.withRevision(r)
			stored, serr := w.seal.seal(k.resource, value)
			if serr != nil {
				o.err = serr
				continue
			}
			b.Queue(pgInsObj, k.resource, k.namespace, k.name, r, e.node, e.labels, e.fields, stored)
			b.Queue(pgInsChange, r, k.resource, k.namespace, k.name, int64(Added), ts, e.labels, e.fields, nil, nil, stored)
			st[k] = &rowState{rev: r, labels: e.labels, fields: e.fields, value: value}
			c = &change{rev: r, typ: Added, key: k, info: e.info, ts: ts, value: value,
				rawLabels: e.labels, rawFields: e.fields, haveSets: true, labels: e.labelSet, fields: e.fieldSet}
		case opUpdate:
			e, k := o.enc, o.enc.key
			cur, ok := st[k]
			if !ok {
				o.err = ErrNotFound
				continue
			}
			if o.precond != 0 && o.precond != cur.rev {
				if o.current {
					o.cur, o.curRev = cur.value, cur.rev
				}
				o.err = conflict(o.precond, cur.rev)
				continue
			}
			value := e.withRevision(r)
			stored, serr := w.seal.seal(k.resource, value)
			if serr != nil {
				o.err = serr
				continue
			}
			prevLabels, prevFields := prevColumn(cur.labels, e.labels), prevColumn(cur.fields, e.fields)
			b.Queue(pgUpdObj, r, e.node, e.labels, e.fields, stored, k.resource, k.namespace, k.name)
			b.Queue(pgInsChange, r, k.resource, k.namespace, k.name, int64(Modified), ts, e.labels, e.fields, prevLabels, prevFields, stored)
			st[k] = &rowState{rev: r, labels: e.labels, fields: e.fields, value: value}
			c = &change{rev: r, typ: Modified, key: k, info: e.info, ts: ts, value: value,
				rawLabels: e.labels, rawFields: e.fields, rawPrevLabels: prevLabels, rawPrevFields: prevFields,
				haveSets: true, labels: e.labelSet, fields: e.fieldSet}
		case opDelete:
			k := o.key
			cur, ok := st[k]
			if !ok {
				o.err = ErrNotFound
				continue
			}
			if o.precond != 0 && o.precond != cur.rev {
				o.cur, o.curRev = cur.value, cur.rev
				o.err = conflict(o.precond, cur.rev)
				continue
			}
			value, rerr := restamp(cur.value, cur.rev, r)
			if rerr != nil {
				o.err = rerr
				continue
			}
			stored, serr := w.seal.seal(k.resource, value)
			if serr != nil {
				o.err = serr
				continue
			}
			b.Queue(pgDelObj, k.resource, k.namespace, k.name)
			b.Queue(pgInsChange, r, k.resource, k.namespace, k.name, int64(Deleted), ts, cur.labels, cur.fields, nil, nil, stored)
			delete(st, k)
			c = &change{rev: r, typ: Deleted, key: k, info: o.info, ts: ts, value: value,
				rawLabels: cur.labels, rawFields: cur.fields}
		default:
			o.err = fmt.Errorf("unknown op kind %d", o.kind)
			continue
		}
		rev = r
		o.rev, o.value = r, c.value
		changes = append(changes, c)
	}
	if b.Len() == 0 {
		return changes, rev, nil
	}
	err = w.conn.Raw(func(dc any) error {
		conn := dc.(*stdlib.Conn).Conn()
		br := conn.SendBatch(ctx, &b)
		for i := range b.Len() {
			tag, err := br.Exec()
			if err != nil {
				br.Close() //nolint:errcheck // the statement's error is the one to report
				return err
			}
			if n := tag.RowsAffected(); n != 1 {
				br.Close() //nolint:errcheck // as above
				return fmt.Errorf("pipelined write %d affected %d rows, not 1: %w", i, n, ErrCorrupt)
			}
		}
		return br.Close()
	})
	if err != nil {
		return nil, 0, err
	}
	return changes, rev, nil
}

// prefetch reads the current rows of every key the ops touch.
func (w *writer) prefetch(ctx context.Context, ops []*op) (map[key]*rowState, error) {
	st := make(map[key]*rowState, len(ops))
	var res, ns, names []string
	seen := make(map[key]bool, len(ops))
	for _, o := range ops {
		k := o.key
		if o.enc != nil {
			k = o.enc.key
		}
		if o.err != nil || seen[k] {
			continue
		}
		seen[k] = true
		res, ns, names = append(res, k.resource), append(ns, k.namespace), append(names, k.name)
	}
	if len(res) == 0 {
		return st, nil
	}
	rows, err := w.conn.QueryContext(ctx, pgPrefetch, res, ns, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k key
		s := &rowState{}
		if err := rows.Scan(&k.resource, &k.namespace, &k.name, &s.rev, &s.labels, &s.fields, &s.value); err != nil {
			return nil, err
		}
		if s.value, err = w.seal.unseal(k.resource, s.value); err != nil {
			return nil, err
		}
		st[k] = s
	}
	return st, rows.Err()
}
