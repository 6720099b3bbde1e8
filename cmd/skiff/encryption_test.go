package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/encryption"
	"github.com/skiffhq/skiff/storage"
)

// TestBackupRestoreCarryTheKeySeparately: a backup of a store with
// encrypted Secrets writes the key to a file of its own and says so;
// restore installs it (and keeps a different current key), so the
// restored Secrets read back; rotate-key then re-encrypts them.
func TestBackupRestoreCarryTheKeySeparately(t *testing.T) {
	ctx := context.Background()
	src, dst := t.TempDir(), t.TempDir()
	keys, err := encryption.Load(filepath.Join(src, "server", encryption.FileName))
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(ctx, storage.Options{Path: filepath.Join(src, "server", "state.db"), Sealer: keys, ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	s := &api.Secret{Data: map[string][]byte{"k": []byte("v")}}
	s.Name, s.Namespace = "db", "default"
	api.SetTypeMeta(s)
	if err := st.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	st.Close()
	backup := filepath.Join(t.TempDir(), "skiff.db")
	code, out, errs := runCLI("server", "backup", "--config", "", "--data-dir", src, "--to", backup)
	if code != 0 || !strings.Contains(out, "their key is in "+backup+".key") {
		t.Fatalf("server backup = %d, %q, %q; want it to name the key file", code, out, errs)
	}
	if fi, err := os.Stat(backup + ".key"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup key file: %v; want mode 0600", err)
	}
	// A different key already in the destination is kept aside.
	if _, err := encryption.Load(filepath.Join(dst, "server", encryption.FileName)); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI("server", "restore", "--config", "", "--data-dir", dst, "--from", backup)
	if code != 0 || !strings.Contains(out, "restored the encryption key from "+backup+".key") || !strings.Contains(out, "previous encryption key is kept") {
		t.Fatalf("server restore = %d, %q, %q", code, out, errs)
	}
	restored, err := encryption.Load(filepath.Join(dst, "server", encryption.FileName))
	if err != nil {
		t.Fatal(err)
	}
	st, err = storage.Open(ctx, storage.Options{Path: filepath.Join(dst, "server", "state.db"), Sealer: restored, ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	obj, err := st.Get(ctx, "secrets", "default", "db")
	st.Close()
	if err != nil || string(obj.(*api.Secret).Data["k"]) != "v" {
		t.Fatalf("the restored secret = %v, %v; want it readable with the restored key", obj, err)
	}

	code, out, errs = runCLI("server", "rotate-key", "--config", "", "--data-dir", dst)
	if code != 0 || !strings.Contains(out, "re-encrypted 2 stored secret values") {
		t.Errorf("server rotate-key = %d, %q, %q; want the object and its history re-encrypted", code, out, errs)
	}
}
