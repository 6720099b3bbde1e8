package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// backend is what differs between the databases a Store can sit on. The
// writer goroutine and its group commit, the read statements, the
// broadcaster and its watch cache are shared: a backend supplies the
// connections (through database/sql), the SQL dialect and the framing of
// a write transaction. sqliteBackend and pgBackend implement it.
type backend interface {
	// kind names the backend ("sqlite", "postgres") for logs and errors.
	kind() string
	// open connects, checks or initialises the schema, and returns the
	// writer's pool and the read pool.
	open(ctx context.Context, s *Store) (wdb, rdb *sql.DB, err error)
	// rebind turns a query written with ? placeholders into the
	// database's own.
	rebind(q string) string
	// containsBytes is an SQL condition, with one ? placeholder, that
	// holds when the bytes given are found in the blob column col.
	containsBytes(col string) string
	// readTx is the options of a read transaction that sees one
	// consistent snapshot.
	readTx() *sql.TxOptions
	// begin starts a write transaction on the writer's connection and
	// returns the last committed revision and change timestamp, read
	// under the lock that serialises writers (on PostgreSQL, other
	// servers' writers too).
	begin(ctx context.Context, w *writer) (rev, lastTs int64, err error)
	// beginMaintenance starts a transaction that does not assign
	// revisions (compaction).
	beginMaintenance(ctx context.Context, w *writer) error
	// commit records rev and ts as the last revision and change
	// timestamp, and commits.
	commit(ctx context.Context, w *writer, rev, ts int64) error
	// resetAfterFailure says whether the writer's connection must be
	// replaced after a failed transaction (a network database may have
	// lost it).
	resetAfterFailure() bool
	// shrink returns space freed by compaction; checkpoint bounds the
	// write-ahead log. Both run as writer tasks or not at all.
	shrink(ctx context.Context, s *Store) error
	checkpoint(ctx context.Context, s *Store) error
	// backup writes a consistent copy of the store to a new SQLite file.
	backup(ctx context.Context, s *Store, path string) error
	// run is the backend's background work until ctx ends (PostgreSQL:
	// following other servers' writes); nil for none.
	run(ctx context.Context, s *Store)
	// close releases what open took beyond the pools.
	close() error
}

// Datastore URL schemes accepted by ParseDatastore.
const (
	SQLiteScheme   = "sqlite://"
	PostgresScheme = "postgres://"
)

// ParseDatastore turns a --datastore URL into the Options field that
// selects the backend: sqlite://<path> sets Path,
// postgres://user[:password]@host[:port]/db?sslmode=... (or
// postgresql://) sets Postgres. Other fields are left zero.
func ParseDatastore(datastore string) (Options, error) {
	if p, ok := strings.CutPrefix(datastore, SQLiteScheme); ok {
		if p == "" {
			return Options{}, fmt.Errorf("datastore %q: the path is empty", datastore)
		}
		return Options{Path: p}, nil
	}
	if strings.HasPrefix(datastore, PostgresScheme) || strings.HasPrefix(datastore, "postgresql://") {
		u, err := url.Parse(datastore)
		if err != nil {
			// url.Error repeats the URL, password included: keep only
			// what is wrong with it.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return Options{}, fmt.Errorf("datastore %s: %w", Redact(datastore), err)
		}
		if strings.Trim(u.Path, "/") == "" {
			return Options{}, fmt.Errorf("datastore %s: the database name is missing (postgres://user@host:port/db)", Redact(datastore))
		}
		return Options{Postgres: datastore}, nil
	}
	return Options{}, fmt.Errorf("datastore %q: want sqlite://<path> or postgres://user@host:port/db", Redact(datastore))
}

// Redact returns a datastore URL with its password replaced, for logs
// and errors.
func Redact(datastore string) string {
	u, err := url.Parse(datastore)
	if err != nil || u.User == nil {
		if err != nil && strings.Contains(datastore, "@") {
			return "<unparseable datastore URL>"
		}
		return datastore
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// rebindDollar numbers ? placeholders as $1, $2... Queries here never
// hold a ? inside a string literal.
func rebindDollar(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
