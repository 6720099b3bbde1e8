package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/pgtest"
	"github.com/skiffhq/skiff/storage"
)

// TestServerMigrateSQLiteToPostgres migrates a store with a private
// PostgreSQL cluster as the destination and checks what arrived; a second
// run into the now non-empty database is refused.
func TestServerMigrateSQLiteToPostgres(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := storage.Open(ctx, storage.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		cm := &api.ConfigMap{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: fmt.Sprint("c", i)}, Data: map[string]string{"i": fmt.Sprint(i)}}
		if err := st.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	cluster := pgtest.Start(t, pgtest.Options{})
	to := cluster.Database(t)
	code, out, errs := runCLI("server", "migrate", "--from", "sqlite://"+path, "--to", to)
	if code != 0 || !strings.Contains(out, "migrated 20 objects and 20 changes (revision 20") {
		t.Fatalf("migrate = %d, %q, %q; want 0 and a summary", code, out, errs)
	}
	dst, err := storage.Open(ctx, storage.Options{Postgres: to})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	objs, rev, err := dst.List(ctx, "configmaps", storage.ListOptions{})
	if err != nil || len(objs) != 20 || rev != 20 {
		t.Errorf("List in PostgreSQL = %d at %d, %v; want 20 at 20", len(objs), rev, err)
	}
	// A backup of the PostgreSQL datastore comes with the servers' key.
	keyDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(keyDir, "server"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keyDir, "server", "encryption.key"), []byte("aesgcm k1 x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "pg.db")
	code, out, errs = runCLI("server", "backup", "--config", "", "--data-dir", keyDir, "--datastore", to, "--to", backup)
	if code != 0 || !strings.Contains(out, backup+".key") {
		t.Fatalf("server backup --datastore postgres = %d, %q, %q; want the key beside the backup", code, out, errs)
	}
	if b, err := os.ReadFile(backup + ".key"); err != nil || string(b) != "aesgcm k1 x\n" {
		t.Errorf("backup key = %q, %v; want the data dir's key file", b, err)
	}
	code, _, errs = runCLI("server", "migrate", "--from", "sqlite://"+path, "--to", to)
	if code != 1 || !strings.Contains(errs, "not empty") {
		t.Errorf("second migrate = %d, %q; want 1 and not empty", code, errs)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "migrate", "--to", to}, "needs --from"},
		{[]string{"server", "migrate", "--from", "mysql://x", "--to", to}, "--from"},
		{[]string{"server", "migrate", "--from", "sqlite://" + path, "--to", "postgres://host"}, "database name"},
	} {
		if code, _, errs := runCLI(tc.args...); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%q = %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}
