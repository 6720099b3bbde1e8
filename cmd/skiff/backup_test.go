package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// openStore opens the store of dataDir (the test then holds its lock).
func openStore(t *testing.T, dataDir string) *storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), storage.Options{Path: filepath.Join(dataDir, "server", "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func hasConfigMap(t *testing.T, dataDir, name string) bool {
	t.Helper()
	st := openStore(t, dataDir)
	defer st.Close()
	_, err := st.Get(context.Background(), "configmaps", "default", name)
	return err == nil
}

// TestServerBackupRestoreOffline backs up a store no server holds,
// restores it into a fresh data dir and over an existing one, and checks
// the refusals: an existing backup file, a garbage backup, a store in use.
func TestServerBackupRestoreOffline(t *testing.T) {
	ctx := context.Background()
	src, dst := t.TempDir(), t.TempDir()
	st := openStore(t, src)
	if err := st.Create(ctx, storagetest.ConfigMap("default", "precious", map[string]string{"k": "v"})); err != nil {
		t.Fatal(err)
	}
	st.Close()
	backup := filepath.Join(t.TempDir(), "skiff.db")

	code, out, errs := runCLI("server", "backup", "--config", "", "--data-dir", src, "--to", backup)
	if code != 0 || !strings.Contains(out, "backed up "+filepath.Join(src, "server", "state.db")) {
		t.Fatalf("server backup = %d, %q, %q; want 0 and \"backed up …\"", code, out, errs)
	}
	if code, _, errs := runCLI("server", "backup", "--config", "", "--data-dir", src, "--to", backup); code != 1 || !strings.Contains(errs, "file exists") {
		t.Errorf("server backup over an existing file = %d, %q; want 1, file exists", code, errs)
	}

	// Into a fresh data dir.
	code, out, errs = runCLI("server", "restore", "--config", "", "--data-dir", dst, "--from", backup)
	if code != 0 || !strings.Contains(out, "restored "+backup) || strings.Contains(out, "previous store") {
		t.Fatalf("server restore (fresh) = %d, %q, %q", code, out, errs)
	}
	if !hasConfigMap(t, dst, "precious") {
		t.Errorf("restored store lacks configmap precious")
	}
	if left, _ := filepath.Glob(filepath.Join(dst, "server", "state.db.restoring*")); len(left) > 0 {
		t.Errorf("restore left %q", left)
	}

	// Over an existing store: the old one is kept aside.
	st = openStore(t, dst)
	st.Create(ctx, storagetest.ConfigMap("default", "newer", nil))
	st.Close()
	code, out, errs = runCLI("server", "restore", "--config", "", "--data-dir", dst, "--from", backup)
	if code != 0 || !strings.Contains(out, "the previous store is kept as") {
		t.Fatalf("server restore (over) = %d, %q, %q", code, out, errs)
	}
	if hasConfigMap(t, dst, "newer") || !hasConfigMap(t, dst, "precious") {
		t.Errorf("after restore: want precious and not newer")
	}
	if kept, _ := filepath.Glob(filepath.Join(dst, "server", "state.db.before-restore-*")); len(kept) == 0 {
		t.Errorf("the replaced store was not kept")
	}

	// A garbage backup is refused and the store is left alone.
	garbage := filepath.Join(t.TempDir(), "garbage.db")
	os.WriteFile(garbage, []byte("not a database at all, not even close"), 0o600)
	if code, _, errs := runCLI("server", "restore", "--config", "", "--data-dir", dst, "--from", garbage); code != 1 || !strings.Contains(errs, "restore from "+garbage) {
		t.Errorf("server restore (garbage) = %d, %q; want 1 naming the file", code, errs)
	}
	if !hasConfigMap(t, dst, "precious") {
		t.Errorf("a refused restore changed the store")
	}

	// A store in use is not replaced.
	held := openStore(t, dst)
	defer held.Close()
	if code, _, errs := runCLI("server", "restore", "--config", "", "--data-dir", dst, "--from", backup); code != 1 || !strings.Contains(errs, "stop it first") {
		t.Errorf("server restore (in use) = %d, %q; want 1, stop it first", code, errs)
	}
}

func TestServerBackupUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"server", "backup", "--config", ""}, 2, "needs --to FILE"},
		{[]string{"server", "restore", "--config", ""}, 2, "needs --from FILE"},
		{[]string{"server", "backup", "--config", "", "--datastore", "postgres://x", "--to", "f"}, 2, "database name"},
		{[]string{"server", "restore", "--config", "", "--datastore", "postgres://x/db", "--from", "f"}, 2, "only sqlite://"},
		{[]string{"server", "backup", "--config", "", "--data-dir", "/nonexistent-skiff", "--to", "f"}, 1, "no store to back up"},
		{[]string{"server", "restore", "--config", "", "--from", "f", "extra"}, 2, "takes no arguments"},
	} {
		if code, _, errs := runCLI(tt.args...); code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("run(%q) = %d, %q; want %d, ~%q", tt.args, code, errs, tt.code, tt.want)
		}
	}
}

// TestServerBackupOnline backs up the store of a running server, which
// holds its lock: the CLI asks the server for its online backup.
func TestServerBackupOnline(t *testing.T) {
	h := startCLIHarness(t)
	h.create("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: live\n  namespace: default\ndata:\n  k: v\n")
	dataDir := filepath.Dir(filepath.Dir(h.info.ClientConfigPath))
	backup := filepath.Join(t.TempDir(), "live.db")
	code, out, errs := runCLI("server", "backup", "--config", "", "--data-dir", dataDir, "--to", backup)
	if code != 0 || !strings.Contains(out, "from the running server") {
		t.Fatalf("server backup (online) = %d, %q, %q", code, out, errs)
	}
	restored := t.TempDir()
	if code, _, errs := runCLI("server", "restore", "--config", "", "--data-dir", restored, "--from", backup); code != 0 {
		t.Fatalf("restore of the online backup = %d, %q", code, errs)
	}
	if !hasConfigMap(t, restored, "live") {
		t.Errorf("online backup lacks configmap live")
	}
}
