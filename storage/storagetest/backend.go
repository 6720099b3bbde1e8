package storagetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/internal/pgtest"
	"github.com/skiffhq/skiff/storage"
)

// Backend names a kind of datastore the conformance tests run on.
type Backend struct {
	// Name is "sqlite" or "postgres", the subtest's name.
	Name string
}

// backends are the datastores every conformance test runs against.
var backends = []Backend{{Name: "sqlite"}, {Name: "postgres"}}

// ForEachBackend runs fn as a subtest per backend (sqlite, postgres).
// PostgreSQL runs in a private cluster shared by the test binary (see
// Main); each call of Fresh gets a database of its own.
func ForEachBackend(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) { fn(t, b) })
	}
}

// Fresh returns opts naming a new, empty datastore of b: a file in
// tb.TempDir() (opts.Path, when set, is taken relative to it) or a new
// database in the shared PostgreSQL cluster.
func (b Backend) Fresh(tb testing.TB, opts storage.Options) storage.Options {
	tb.Helper()
	switch b.Name {
	case "postgres":
		opts.Path = ""
		opts.Postgres = Postgres(tb).Database(tb)
	default:
		name := opts.Path
		if name == "" {
			name = "state.db"
		}
		opts.Path = filepath.Join(tb.TempDir(), name)
	}
	return opts
}

// Open opens a Store on a fresh datastore of b and closes it when the
// test ends.
func (b Backend) Open(tb testing.TB, opts storage.Options) *storage.Store {
	tb.Helper()
	return OpenAt(tb, b.Fresh(tb, opts))
}

// OpenAt opens a Store with opts as they are (a datastore from Fresh, to
// open a second server's Store on it or to reopen it) and closes it when
// the test ends.
func OpenAt(tb testing.TB, opts storage.Options) *storage.Store {
	tb.Helper()
	s, err := storage.Open(context.Background(), opts)
	if err != nil {
		tb.Fatalf("storage.Open(%s) = %v; want nil", datastore(opts), err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("Close() = %v; want nil", err)
		}
	})
	return s
}

func datastore(opts storage.Options) string {
	if opts.Postgres != "" {
		return opts.Postgres
	}
	return opts.Path
}

// shared is the test binary's PostgreSQL cluster, started on first use.
var shared struct {
	mu sync.Mutex
	c  *pgtest.Cluster
}

// Postgres returns the test binary's private PostgreSQL cluster, starting
// it on first use. Main removes it when the tests end.
func Postgres(tb testing.TB) *pgtest.Cluster {
	tb.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil {
		c, err := pgtest.New(pgtest.Options{})
		if err != nil {
			tb.Fatalf("start PostgreSQL: %v", err)
		}
		shared.c = c
	}
	return shared.c
}

// Main runs the tests of a package that uses Postgres and removes the
// cluster afterwards; call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	if shared.c != nil {
		if err := shared.c.Remove(); err != nil {
			fmt.Fprintln(os.Stderr, "remove PostgreSQL cluster:", err)
			code = max(code, 1)
		}
	}
	shared.mu.Unlock()
	os.Exit(code)
}
