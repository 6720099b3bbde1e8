package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/skiffhq/skiff/api"
)

// Claims are unique strings an object holds beside its key: a Service's
// cluster IP and node ports. The store keeps them in a claims table and
// refuses, inside the write's own transaction, a create or update whose
// claims another object holds. The writer's transaction excludes every
// other writer (on PostgreSQL, other servers' too), so the check and the
// write cannot interleave with another server's: two servers can never
// both store a Service with one address.
//
// The store gives claims no meaning: Options.Claims says which strings an
// object claims, per resource.

// ClaimFunc returns the claims of obj, for instance "ip/10.43.0.7". It
// must be a pure function of obj.
type ClaimFunc func(obj api.Object) []string

// ClaimError says that a write was refused because another object holds
// one of its claims. It wraps ErrClaimed.
type ClaimError struct {
	Claim string // the claim at fault
	Owner string // the object holding it: "services/default/web"
}

func (e *ClaimError) Error() string {
	return fmt.Sprintf("%s is held by %s: %v", e.Claim, e.Owner, ErrClaimed)
}

// Unwrap returns ErrClaimed.
func (e *ClaimError) Unwrap() error { return ErrClaimed }

// ErrClaimed means a create or update was refused because another object
// holds one of its claims (see ClaimError); nothing was written.
var ErrClaimed = errors.New("storage: claim held by another object")

// claimsTable is created on open when missing, so databases made before
// claims existed gain it without a schema version change.
const claimsTable = `CREATE TABLE IF NOT EXISTS claims (
	claim     TEXT PRIMARY KEY,
	resource  TEXT NOT NULL,
	namespace TEXT NOT NULL,
	name      TEXT NOT NULL
)`

const (
	claimOwner     = `SELECT resource, namespace, name FROM claims WHERE claim = ?`
	claimInsert    = `INSERT INTO claims (claim, resource, namespace, name) VALUES (?, ?, ?, ?)`
	claimDeleteKey = `DELETE FROM claims WHERE resource = ? AND namespace = ? AND name = ?`
)

// claimsOf returns the sorted, distinct claims of obj, or nil when its
// resource has no ClaimFunc.
func (s *Store) claimsOf(resource string, obj api.Object) []string {
	f := s.opts.Claims[resource]
	if f == nil {
		return nil
	}
	c := f(obj)
	slices.Sort(c)
	return slices.Compact(c)
}

// claimed reports whether writes of resource maintain claims.
func (s *Store) claimed(resource string) bool { return s.opts.Claims[resource] != nil }

// ensureClaims creates the claims table when missing and, when claims are
// configured and the table is empty while claimed objects exist (a
// database from before claims, or one filled by CopyFrom), fills it from
// the stored objects. It runs under the writers' lock. Two stored objects
// with one claim (possible only in data written before claims) keep
// both; the first in key order is recorded as the holder.
func (s *Store) ensureClaims(ctx context.Context) error {
	w := s.w
	rev, lastTs, err := w.be.begin(ctx, w)
	if err != nil {
		return fmt.Errorf("claims: %w", translate(err))
	}
	err = s.fillClaims(ctx)
	if err == nil {
		err = w.be.commit(ctx, w, rev, lastTs)
	}
	if err != nil {
		if rerr := w.rollback(ctx); rerr != nil {
			s.log.Debug("rollback after failed claims setup", "err", rerr)
		}
		return fmt.Errorf("claims: %w", translate(err))
	}
	return nil
}

func (s *Store) fillClaims(ctx context.Context) error {
	w := s.w
	if _, err := w.conn.ExecContext(ctx, claimsTable); err != nil {
		return err
	}
	if len(s.opts.Claims) == 0 {
		return nil
	}
	var any int
	err := w.conn.QueryRowContext(ctx, `SELECT 1 FROM claims LIMIT 1`).Scan(&any)
	if err == nil || !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	resources := make([]string, 0, len(s.opts.Claims))
	for r := range s.opts.Claims {
		resources = append(resources, r)
	}
	slices.Sort(resources)
	for _, r := range resources {
		info, err := s.lookup(r)
		if err != nil {
			return err
		}
		if err := s.fillClaimsOf(ctx, info); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) fillClaimsOf(ctx context.Context, info *api.ResourceInfo) error {
	w := s.w
	rows, err := w.conn.QueryContext(ctx, w.be.rebind(`SELECT namespace, name, value FROM objects WHERE resource = ? ORDER BY namespace, name`), info.Resource)
	if err != nil {
		return err
	}
	type owned struct {
		k      key
		claims []string
	}
	var all []owned
	for rows.Next() {
		var k key
		var v []byte
		if err := rows.Scan(&k.namespace, &k.name, &v); err != nil {
			rows.Close() //nolint:errcheck // the scan error is the one to report
			return err
		}
		k.resource = info.Resource
		if v, err = w.seal.unseal(k.resource, v); err != nil {
			rows.Close() //nolint:errcheck // as above
			return err
		}
		obj, err := decode(info, v)
		if err != nil {
			rows.Close() //nolint:errcheck // as above
			return err
		}
		all = append(all, owned{k: k, claims: s.claimsOf(k.resource, obj)})
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	ins := w.be.rebind(claimInsert + ` ON CONFLICT (claim) DO NOTHING`)
	for _, o := range all {
		for _, c := range o.claims {
			if _, err := w.conn.ExecContext(ctx, ins, c, o.k.resource, o.k.namespace, o.k.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkClaims returns a *ClaimError when another object than k holds one
// of claims. It runs inside the write transaction.
func (w *writer) checkClaims(ctx context.Context, k key, claims []string) (opErr, err error) {
	for _, c := range claims {
		var o key
		err := w.conn.QueryRowContext(ctx, w.be.rebind(claimOwner), c).Scan(&o.resource, &o.namespace, &o.name)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if o != k {
			return &ClaimError{Claim: c, Owner: o.String()}, nil
		}
	}
	return nil, nil
}

// setClaims makes claims exactly what k holds.
func (w *writer) setClaims(ctx context.Context, k key, claims []string) error {
	if _, err := w.conn.ExecContext(ctx, w.be.rebind(claimDeleteKey), k.resource, k.namespace, k.name); err != nil {
		return err
	}
	for _, c := range claims {
		if _, err := w.conn.ExecContext(ctx, w.be.rebind(claimInsert), c, k.resource, k.namespace, k.name); err != nil {
			return err
		}
	}
	return nil
}

// batchClaims reports whether any op of a batch writes a claimed
// resource; such batches are applied op by op (applyEach) on every
// backend, because the claim checks read what earlier ops wrote.
func (s *Store) batchClaims(ops []*op) bool {
	if len(s.opts.Claims) == 0 {
		return false
	}
	for _, o := range ops {
		r := o.key.resource
		if o.enc != nil {
			r = o.enc.key.resource
		}
		if s.claimed(r) {
			return true
		}
	}
	return false
}
