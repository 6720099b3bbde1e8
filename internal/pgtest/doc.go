// Package pgtest runs a private PostgreSQL cluster for tests: Debian's
// PostgreSQL 15 binaries, initdb into a new directory under /tmp owned by
// the postgres user, the server listening on a Unix socket in that
// directory and on a free loopback port, stopped and removed when the
// test (or TestMain) ends. Tests never connect to any other database.
//
// A missing PostgreSQL installation fails the test with a message saying
// what to install; it never skips. Only test code imports this package.
package pgtest
