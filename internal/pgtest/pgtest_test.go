package pgtest_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/skiffhq/skiff/internal/pgtest"
)

func TestClusterStartsStopsAndRestarts(t *testing.T) {
	c := pgtest.Start(t, pgtest.Options{})
	u := c.Database(t)
	db, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatalf("exec = %v; want nil", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("Ping after Stop = nil; want an error")
	}
	if err := c.Start(); err != nil {
		t.Fatalf("Start() = %v", err)
	}
	var x int
	if err := db.QueryRowContext(ctx, "SELECT x FROM t").Scan(&x); err != nil || x != 1 {
		t.Fatalf("SELECT after restart = %d, %v; want 1, nil", x, err)
	}
	tcp, err := sql.Open("pgx", c.TCPURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	if err := tcp.PingContext(ctx); err != nil {
		t.Fatalf("Ping over loopback TCP = %v", err)
	}
}
