package storage

import (
	"context"
	"errors"
	"fmt"
)

// Sealer encrypts the stored values of some resources (Secrets) so that
// their content never reaches the database file or its write-ahead log in
// the clear. The store seals a value just before it is written to SQLite
// and unseals it as it is read back; in memory (watch caches, answers)
// values are plain. Implementations must be safe for concurrent use.
type Sealer interface {
	// Seal returns the stored form of plain; aad (the resource name) is
	// authenticated with it.
	Seal(plain, aad []byte) ([]byte, error)
	// Unseal returns the plain form of stored. A value that is not sealed
	// (written before encryption was turned on) comes back unchanged.
	Unseal(stored, aad []byte) ([]byte, error)
	// Current reports whether stored is sealed with the current key, so
	// Reseal can skip it.
	Current(stored []byte) bool
}

// sealing applies a Sealer to the resources it covers; the zero value
// seals nothing.
type sealing struct {
	s   Sealer
	res map[string]bool
}

func newSealing(s Sealer, resources []string) sealing {
	if s == nil {
		return sealing{}
	}
	m := make(map[string]bool, len(resources))
	for _, r := range resources {
		m[r] = true
	}
	return sealing{s: s, res: m}
}

func (sl sealing) covers(resource string) bool { return sl.s != nil && sl.res[resource] }

// seal returns the value to write for resource.
func (sl sealing) seal(resource string, v []byte) ([]byte, error) {
	if !sl.covers(resource) {
		return v, nil
	}
	out, err := sl.s.Seal(v, []byte(resource))
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", resource, err)
	}
	return out, nil
}

// unseal returns the plain value read for resource. The result never
// aliases v when v was sealed; callers that keep v copy it as before.
func (sl sealing) unseal(resource string, v []byte) ([]byte, error) {
	if !sl.covers(resource) {
		return v, nil
	}
	out, err := sl.s.Unseal(v, []byte(resource))
	if err != nil {
		return nil, fmt.Errorf("unseal %s: %w: %w", resource, ErrCorrupt, err)
	}
	return out, nil
}

// Reseal rewrites every stored value of the sealed resources, live
// objects and the change log alike, that is not sealed with the
// Sealer's current key: after a key rotation, or when encryption is
// turned on for a store that held plain values. It writes nothing when
// there is nothing to do, and returns how many values it rewrote. It runs
// on the writer, between transactions.
func (s *Store) Reseal(ctx context.Context) (int, error) {
	if s.seal.s == nil {
		return 0, nil
	}
	var n int
	o := &op{kind: opTask, what: "reseal", task: func(ctx context.Context, w *writer) error {
		var err error
		n, err = w.reseal(ctx, s.seal)
		return err
	}}
	if err := s.submit(ctx, o); err != nil {
		return n, fmt.Errorf("reseal: %w", err)
	}
	return n, nil
}

// reseal does Reseal's work in one transaction. On PostgreSQL it holds
// the writers' lock (begin), so no other server's write of a row falls
// between reading and rewriting it.
func (w *writer) reseal(ctx context.Context, sl sealing) (n int, err error) {
	_, pg := w.be.(*pgBackend)
	// Rows are named by a text key: the rowid or revision on SQLite, the
	// object's key or revision on PostgreSQL.
	tables := []struct{ sel, upd string }{
		{`SELECT CAST(rowid AS TEXT), value FROM objects WHERE resource = ?`, `UPDATE objects SET value = ? WHERE rowid = CAST(? AS INTEGER)`},
		{`SELECT CAST(rev AS TEXT), value FROM changes WHERE resource = ?`, `UPDATE changes SET value = ? WHERE rev = CAST(? AS INTEGER)`},
	}
	if pg {
		_, _, err = w.be.begin(ctx, w)
		tables[0] = struct{ sel, upd string }{
			`SELECT namespace || '/' || name, value FROM objects WHERE resource = $1`,
			`UPDATE objects SET value = $1 WHERE resource = $3 AND namespace = split_part($2, '/', 1) AND name = split_part($2, '/', 2)`,
		}
		tables[1] = struct{ sel, upd string }{
			`SELECT rev::text, value FROM changes WHERE resource = $1`,
			`UPDATE changes SET value = $1 WHERE rev = $2::bigint AND resource = $3`,
		}
	} else {
		err = w.be.beginMaintenance(ctx, w)
	}
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			if rerr := w.rollback(ctx); rerr != nil {
				err = fmt.Errorf("%w (rollback: %w)", err, rerr)
			}
		}
	}()
	for r := range sl.res {
		for _, t := range tables {
			type row struct {
				id  string
				val []byte
			}
			rows, err := w.conn.QueryContext(ctx, t.sel, r)
			if err != nil {
				return n, translate(err)
			}
			var stale []row
			for rows.Next() {
				var x row
				if err := rows.Scan(&x.id, &x.val); err != nil {
					rows.Close()
					return n, translate(err)
				}
				if !sl.s.Current(x.val) {
					stale = append(stale, x)
				}
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return n, translate(err)
			}
			for _, x := range stale {
				plain, err := sl.unseal(r, x.val)
				if err != nil {
					return n, err
				}
				sealed, err := sl.seal(r, plain)
				if err != nil {
					return n, err
				}
				args := []any{sealed, x.id}
				if pg {
					args = append(args, r)
				}
				if _, err := w.conn.ExecContext(ctx, t.upd, args...); err != nil {
					return n, translate(err)
				}
				n++
			}
		}
	}
	if n == 0 {
		return 0, w.rollback(ctx)
	}
	_, err = w.conn.ExecContext(ctx, "COMMIT")
	return n, err
}
