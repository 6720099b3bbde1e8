package storage

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"sync"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/api/labels"
)

// ListOptions selects what a list returns.
type ListOptions struct {
	// Namespace limits the list to one namespace; "" lists all.
	Namespace string
	// Labels and Fields select objects; zero values select everything.
	Labels labels.Selector
	Fields fields.Selector
}

// ListRaw returns the stored JSON of every selected object, ordered by
// namespace and name, and the revision the list was read at: the list is
// one consistent snapshot, so a watch from that revision misses nothing.
// The bytes belong to the caller.
func (s *Store) ListRaw(ctx context.Context, resource string, opts ListOptions) ([][]byte, int64, error) {
	out := make([][]byte, 0)
	rev, err := s.scan(ctx, resource, opts, func(v []byte) error {
		out = append(out, bytes.Clone(v))
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, rev, nil
}

// List is ListRaw with the objects decoded; the caller owns them.
func (s *Store) List(ctx context.Context, resource string, opts ListOptions) ([]api.Object, int64, error) {
	raw, rev, err := s.ListRaw(ctx, resource, opts)
	if err != nil {
		return nil, 0, err
	}
	objs, err := decodeAll(s.resources[resource], raw)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", resource, err)
	}
	return objs, rev, nil
}

// scan reads the revision and the selected rows in one read transaction
// and calls keep with each selected value (valid only during the call).
// Selectors are evaluated on the stored labels and fields columns, so
// values are never decoded here; an exact spec.nodeName uses the node
// index.
// Scan calls fn with the stored JSON of every selected object, in
// ListRaw's order, and returns the revision the list was read at. The
// bytes are the store's only during the call: fn must copy what it
// keeps. A reader that decodes each object into types of its own (the
// usage sample's few figures of every Node and Pod, each minute) so
// allocates no copy of the whole list. An error from fn ends the scan
// and is returned as is.
func (s *Store) Scan(ctx context.Context, resource string, opts ListOptions, fn func(value []byte) error) (int64, error) {
	return s.scan(ctx, resource, opts, fn)
}

func (s *Store) scan(ctx context.Context, resource string, opts ListOptions, keep func([]byte) error) (int64, error) {
	info, err := s.lookup(resource)
	if err != nil {
		return 0, fmt.Errorf("list: %w", err)
	}
	ns := opts.Namespace
	if !info.Namespaced && ns != "" {
		return 0, fmt.Errorf("list %s: %s are not namespaced: %w", resource, resource, ErrInvalid)
	}
	node, byNode := opts.Fields.RequiresExactMatch("spec.nodeName")
	byNode = byNode && node != ""
	if err := s.beginRead(); err != nil {
		return 0, fmt.Errorf("list %s: %w", resource, err)
	}
	defer s.endRead()
	tx, err := s.rdb.BeginTx(ctx, s.be.readTx())
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", resource, translate(err))
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	var rev int64
	if err := tx.StmtContext(ctx, s.rs.meta).QueryRowContext(ctx, metaRevision).Scan(&rev); err != nil {
		return 0, fmt.Errorf("list %s: %w", resource, translate(err))
	}
	skip := ""
	if byNode {
		skip = "spec.nodeName" // the node column has it
	}
	hint := fieldHint(opts.Fields, skip)
	stmt := s.rs.list[b2i(ns != "")][b2i(byNode)][b2i(hint != nil)]
	args := []any{resource}
	if ns != "" {
		args = append(args, ns)
	}
	if byNode {
		args = append(args, node)
	}
	if hint != nil {
		args = append(args, hint)
	}
	rows, err := tx.StmtContext(ctx, stmt).QueryContext(ctx, args...)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", resource, translate(err))
	}
	defer rows.Close()
	byLabels, byFields := !opts.Labels.Empty(), !opts.Fields.Empty()
	var rawLabels, rawFields, value sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&rawLabels, &rawFields, &value); err != nil {
			return 0, fmt.Errorf("list %s: %w", resource, translate(err))
		}
		if byLabels || byFields {
			var l, f []byte
			if byLabels {
				l = rawLabels
			}
			if byFields {
				f = rawFields
			}
			ls, fs, err := decodeSets(l, f)
			if err != nil {
				return 0, fmt.Errorf("list %s: %w", resource, err)
			}
			if byLabels && !opts.Labels.Matches(ls) || byFields && !opts.Fields.Matches(fs) {
				continue
			}
		}
		if s.seal.covers(resource) {
			plain, err := s.seal.unseal(resource, value)
			if err != nil {
				return 0, fmt.Errorf("list %s: %w", resource, err)
			}
			if err := keep(plain); err != nil {
				return 0, err
			}
			continue
		}
		if err := keep(value); err != nil {
			return 0, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("list %s: %w", resource, translate(err))
	}
	return rev, nil
}

// fieldHint returns bytes that the stored fields of every object sel
// matches contain, for the database to skip the rows without them before
// their values are read: `"field":"value"` of the first of sel's
// requirements that a field equal a value that is not empty (a field an
// object lacks is empty) and that both are stored as they are (plain
// JSON, as marshalStringMap and encoding/json store them alike). nil
// when sel has none, or only one on the field skip. The rows left are
// still matched against sel.
//
// Without it, the join-token sweep (type=skiff.io/join-token) read every
// Secret of the system namespace each minute: on a fleet's server,
// 10,000 node credentials, 12 MB of garbage.
func fieldHint(sel fields.Selector, skip string) []byte {
	for _, r := range sel.Requirements() {
		if r.Field == skip || r.Operator != fields.Equals || r.Value == "" || !plainJSON(r.Field) || !plainJSON(r.Value) {
			continue
		}
		b := make([]byte, 0, len(r.Field)+len(r.Value)+5)
		b = append(b, '"')
		b = append(b, r.Field...)
		b = append(b, `":"`...)
		b = append(b, r.Value...)
		return append(b, '"')
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// decodeParallelMin is the list length from which decoding is spread over
// all CPUs.
const decodeParallelMin = 256

// decodeAll decodes values into new objects, in parallel for long lists.
func decodeAll(info *api.ResourceInfo, raw [][]byte) ([]api.Object, error) {
	objs := make([]api.Object, len(raw))
	workers := min(runtime.GOMAXPROCS(0), len(raw)/decodeParallelMin+1)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	per := (len(raw) + workers - 1) / workers
	for i := range workers {
		lo, hi := i*per, min((i+1)*per, len(raw))
		wg.Go(func() {
			for j := lo; j < hi; j++ {
				o, err := decode(info, raw[j])
				if err != nil {
					errs[i] = err
					return
				}
				objs[j] = o
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return objs, nil
}
