package storage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/skiffhq/skiff/api"
)

// readStmts are the statements prepared on the read pool; database/sql
// prepares each lazily on every pooled connection and reuses it.
type readStmts struct {
	get     *sql.Stmt
	node    *sql.Stmt // an object's node column
	meta    *sql.Stmt
	changes *sql.Stmt
	tsAt    *sql.Stmt
	tail    *sql.Stmt // every resource's changes, for following other servers
	// list[ns][node][hint]: with or without a namespace, a node
	// constraint and a field hint (fieldHint).
	list [2][2][2]*sql.Stmt
}

const listColumns = `SELECT labels, fields, value FROM objects `

func prepareReads(ctx context.Context, db *sql.DB, be backend) (*readStmts, error) {
	rs := &readStmts{}
	type query struct {
		stmt **sql.Stmt
		q    string
	}
	var lists []query
	for ns := range 2 {
		for node := range 2 {
			for hint := range 2 {
				q := listColumns + `WHERE resource = ?`
				if ns == 1 {
					q += ` AND namespace = ?`
				}
				if node == 1 {
					q += ` AND node = ? AND node <> ''`
				}
				if hint == 1 {
					q += ` AND ` + be.containsBytes("fields")
				}
				lists = append(lists, query{&rs.list[ns][node][hint], q + ` ORDER BY namespace, name`})
			}
		}
	}
	for _, p := range append([]query{
		{&rs.get, `SELECT value, rev FROM objects WHERE resource = ? AND namespace = ? AND name = ?`},
		{&rs.node, `SELECT node FROM objects WHERE resource = ? AND namespace = ? AND name = ?`},
		{&rs.meta, `SELECT value FROM meta WHERE key = ?`},
		{&rs.changes, `SELECT rev, namespace, name, type, ts, labels, fields, prev_labels, prev_fields, value
			FROM changes WHERE rev > ? AND rev <= ? AND resource = ? ORDER BY rev LIMIT ?`},
		{&rs.tsAt, `SELECT ts FROM changes WHERE rev >= ? ORDER BY rev LIMIT 1`},
		{&rs.tail, `SELECT rev, resource, namespace, name, type, ts, labels, fields, prev_labels, prev_fields, value
			FROM changes WHERE rev > ? AND rev <= ? ORDER BY rev LIMIT ?`},
	}, lists...) {
		st, err := db.PrepareContext(ctx, be.rebind(p.q))
		if err != nil {
			return nil, fmt.Errorf("prepare: %w", translate(err))
		}
		*p.stmt = st
	}
	return rs, nil
}

// GetRaw returns the stored JSON of one object and its revision. The
// bytes belong to the caller. namespace is "" for cluster-scoped kinds.
func (s *Store) GetRaw(ctx context.Context, resource, namespace, name string) ([]byte, int64, error) {
	value, rev, shared, err := s.getValue(ctx, resource, namespace, name)
	if shared {
		value = bytes.Clone(value)
	}
	return value, rev, err
}

// getValue is GetRaw whose value may be the hot cache's own (shared
// true): for a caller that only reads it, such as a decode, which need
// not copy an object just written to read it once.
func (s *Store) getValue(ctx context.Context, resource, namespace, name string) (value []byte, rev int64, shared bool, err error) {
	k, err := s.beginPointRead("get", resource, namespace, name)
	if err != nil {
		return nil, 0, false, err
	}
	defer s.endRead()
	if value, rev, ok := s.hot.get(k); ok {
		return value, rev, true, nil
	}
	err = s.rs.get.QueryRowContext(s.pointCtx(ctx), resource, namespace, name).Scan(&value, &rev)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, false, fmt.Errorf("get %s: %w", k, ErrNotFound)
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("get %s: %w", k, translate(err))
	}
	if value, err = s.seal.unseal(resource, value); err != nil {
		return nil, 0, false, fmt.Errorf("get %s: %w", k, err)
	}
	return value, rev, false, nil
}

// pointCtx is the context of a read of one row by its key. On SQLite such
// a read takes microseconds and is not worth interrupting, while a
// context that can end costs two goroutines a statement (database/sql's
// and the driver's watchers), each queued for a core on a busy server
// before it can exit: ctx's values are kept, its end is not. On a
// network database ctx still bounds the round trip.
func (s *Store) pointCtx(ctx context.Context) context.Context {
	if s.be.resetAfterFailure() {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// beginPointRead checks the key of a read of one object (what names the
// read in errors) and begins the read; the caller ends it with endRead.
func (s *Store) beginPointRead(what, resource, namespace, name string) (key, error) {
	info, err := s.lookup(resource)
	if err != nil {
		return key{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := checkKey(info, namespace, name); err != nil {
		return key{}, fmt.Errorf("%s: %w", what, err)
	}
	k := key{resource: resource, namespace: namespace, name: name}
	if err := s.beginRead(); err != nil {
		return key{}, fmt.Errorf("%s %s: %w", what, k, err)
	}
	return k, nil
}

// NodeOf returns the spec.nodeName of one stored object ("" when it has
// none), without reading or decoding the rest of it: what authorizing a
// node's request about a pod needs.
func (s *Store) NodeOf(ctx context.Context, resource, namespace, name string) (string, error) {
	k, err := s.beginPointRead("node of", resource, namespace, name)
	if err != nil {
		return "", err
	}
	defer s.endRead()
	if node, ok := s.hot.node(k); ok {
		return node, nil
	}
	var node sql.NullString
	err = s.rs.node.QueryRowContext(s.pointCtx(ctx), resource, namespace, name).Scan(&node)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("node of %s: %w", k, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("node of %s: %w", k, translate(err))
	}
	return node.String, nil
}

// Get returns one object, decoded; the caller owns it.
func (s *Store) Get(ctx context.Context, resource, namespace, name string) (api.Object, error) {
	value, _, _, err := s.getValue(ctx, resource, namespace, name)
	if err != nil {
		return nil, err
	}
	return decode(s.resources[resource], value)
}

// readChanges returns up to limit changes of resource with revisions in
// (after, to], in order. In the same snapshot it checks that the change
// log still holds everything above from; if not, ErrCompacted.
func (s *Store) readChanges(ctx context.Context, resource string, from, after, to int64, limit int) ([]*change, error) {
	if err := s.beginRead(); err != nil {
		return nil, err
	}
	defer s.endRead()
	s.replayReads.Add(1)
	tx, err := s.rdb.BeginTx(ctx, s.be.readTx())
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", translate(err))
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	var compacted int64
	if err := tx.StmtContext(ctx, s.rs.meta).QueryRowContext(ctx, metaCompacted).Scan(&compacted); err != nil {
		return nil, fmt.Errorf("read changes: %w", translate(err))
	}
	if from < compacted {
		return nil, fmt.Errorf("changes after revision %d: compacted at %d: %w", from, compacted, ErrCompacted)
	}
	rows, err := tx.StmtContext(ctx, s.rs.changes).QueryContext(ctx, after, to, resource, limit)
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", translate(err))
	}
	defer rows.Close()
	info := s.resources[resource]
	var cs []*change
	for rows.Next() {
		c := &change{info: info}
		var t int64
		c.key.resource = resource
		if err := rows.Scan(&c.rev, &c.key.namespace, &c.key.name, &t, &c.ts,
			&c.rawLabels, &c.rawFields, &c.rawPrevLabels, &c.rawPrevFields, &c.value); err != nil {
			return nil, fmt.Errorf("read changes: %w", translate(err))
		}
		if c.value, err = s.seal.unseal(resource, c.value); err != nil {
			return nil, fmt.Errorf("read changes: %w", err)
		}
		c.typ = EventType(t)
		if c.typ < Added || c.typ > Deleted {
			return nil, fmt.Errorf("change %d has type %d: %w", c.rev, t, ErrCorrupt)
		}
		cs = append(cs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read changes: %w", translate(err))
	}
	return cs, nil
}
