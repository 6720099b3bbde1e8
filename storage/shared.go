package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Shared state outside the object model: what servers sharing a
// PostgreSQL store must agree on or tell each other, but that is not an
// API object and has no revision or watch. On SQLite, which one server
// owns, these are pass-throughs.

// ShareBlob stores value under name unless the store already holds a
// blob of that name, and returns the stored one. Servers sharing a
// PostgreSQL store use it to agree on what the first of them created:
// the cluster CA, the admin token. On SQLite, which one server owns, it
// returns value and stores nothing (the server's files are the record).
func (s *Store) ShareBlob(ctx context.Context, name string, value []byte) ([]byte, error) {
	if name == "" || len(value) == 0 {
		return nil, fmt.Errorf("share blob %q: empty name or value: %w", name, ErrInvalid)
	}
	if _, ok := s.be.(*pgBackend); !ok {
		return value, nil
	}
	if err := s.beginRead(); err != nil {
		return nil, fmt.Errorf("share blob %s: %w", name, err)
	}
	defer s.endRead()
	var stored []byte
	err := s.rdb.QueryRowContext(ctx, `WITH i AS (
			INSERT INTO blobs (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING value)
		SELECT value FROM i UNION ALL SELECT value FROM blobs WHERE name = $1 LIMIT 1`, name, value).Scan(&stored)
	if errors.Is(err, sql.ErrNoRows) {
		// Another server inserted it after this statement's snapshot
		// was taken; it has committed, so a new statement sees it.
		err = s.rdb.QueryRowContext(ctx, `SELECT value FROM blobs WHERE name = $1`, name).Scan(&stored)
	}
	if err != nil {
		return nil, fmt.Errorf("share blob %s: %w", name, translate(err))
	}
	return stored, nil
}

// SetBlob stores value under name, replacing any blob of that name (key
// rotation updates the key check this way). On SQLite it stores nothing.
func (s *Store) SetBlob(ctx context.Context, name string, value []byte) error {
	if name == "" || len(value) == 0 {
		return fmt.Errorf("set blob %q: empty name or value: %w", name, ErrInvalid)
	}
	if _, ok := s.be.(*pgBackend); !ok {
		return nil
	}
	if err := s.beginRead(); err != nil {
		return fmt.Errorf("set blob %s: %w", name, err)
	}
	defer s.endRead()
	_, err := s.rdb.ExecContext(ctx, `INSERT INTO blobs (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`, name, value)
	if err != nil {
		return fmt.Errorf("set blob %s: %w", name, translate(err))
	}
	return nil
}

// Blob returns the shared blob name, if the store holds one. On SQLite
// it holds none.
func (s *Store) Blob(ctx context.Context, name string) ([]byte, bool, error) {
	if _, ok := s.be.(*pgBackend); !ok {
		return nil, false, nil
	}
	if err := s.beginRead(); err != nil {
		return nil, false, fmt.Errorf("read blob %s: %w", name, err)
	}
	defer s.endRead()
	var v []byte
	err := s.rdb.QueryRowContext(ctx, `SELECT value FROM blobs WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read blob %s: %w", name, translate(err))
	}
	return v, true, nil
}

// ShareLiveness merges beats (node name to its latest heartbeat seen by
// this server) into the store's liveness table, keeping the later time
// per node, and returns the merged table: every node's latest heartbeat
// seen by any server. Servers call it every few seconds, so heartbeats
// cost no store write each and the leader sees heartbeats that reached
// other servers. On SQLite it returns beats.
func (s *Store) ShareLiveness(ctx context.Context, beats map[string]time.Time) (map[string]time.Time, error) {
	if _, ok := s.be.(*pgBackend); !ok {
		return beats, nil
	}
	if err := s.beginRead(); err != nil {
		return nil, fmt.Errorf("share liveness: %w", err)
	}
	defer s.endRead()
	nodes := make([]string, 0, len(beats))
	times := make([]int64, 0, len(beats))
	for n, t := range beats {
		nodes = append(nodes, n)
		times = append(times, t.UnixNano())
	}
	if len(nodes) > 0 {
		_, err := s.rdb.ExecContext(ctx, `INSERT INTO liveness (node, last)
			SELECT * FROM unnest($1::text[], $2::bigint[])
			ON CONFLICT (node) DO UPDATE SET last = GREATEST(liveness.last, EXCLUDED.last)`, nodes, times)
		if err != nil {
			return nil, fmt.Errorf("share liveness: %w", translate(err))
		}
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT node, last FROM liveness`)
	if err != nil {
		return nil, fmt.Errorf("share liveness: %w", translate(err))
	}
	defer rows.Close()
	out := make(map[string]time.Time)
	for rows.Next() {
		var n string
		var last int64
		if err := rows.Scan(&n, &last); err != nil {
			return nil, fmt.Errorf("share liveness: %w", translate(err))
		}
		out[n] = time.Unix(0, last)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("share liveness: %w", translate(err))
	}
	return out, nil
}

// ForgetLiveness removes a deleted node from the liveness table.
func (s *Store) ForgetLiveness(ctx context.Context, node string) error {
	if _, ok := s.be.(*pgBackend); !ok {
		return nil
	}
	if err := s.beginRead(); err != nil {
		return fmt.Errorf("forget liveness: %w", err)
	}
	defer s.endRead()
	if _, err := s.rdb.ExecContext(ctx, `DELETE FROM liveness WHERE node = $1`, node); err != nil {
		return fmt.Errorf("forget liveness of %s: %w", node, translate(err))
	}
	return nil
}
