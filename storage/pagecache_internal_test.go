package storage

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestPageCacheSizes checks that the writer's connection keeps its large
// page cache and a reader's has the small one: a reader's cache is
// emptied by any write, and a large one only made each read free what
// the last list filled (BenchmarkSQLiteColdReads).
func TestPageCacheSizes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, c := range []struct {
		readOnly bool
		want     int
	}{{false, writerCacheKiB}, {true, readerCacheKiB}} {
		db, err := sql.Open("sqlite", dsn(path, c.readOnly))
		if err != nil {
			t.Fatal(err)
		}
		var got int
		if err := db.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&got); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if got != -c.want {
			t.Errorf("read-only %v: cache_size %d; want %d", c.readOnly, got, -c.want)
		}
	}
	if readerCacheKiB >= writerCacheKiB {
		t.Errorf("a reader's page cache (%d KiB) is not smaller than the writer's (%d KiB)", readerCacheKiB, writerCacheKiB)
	}
}
