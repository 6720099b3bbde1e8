package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/storage"
)

// TestBackupEndpoint downloads a backup from a running server and opens
// it as a store: it holds the default namespace the server created.
func TestBackupEndpoint(t *testing.T) {
	h := startHarness(t, t.TempDir(), nil)
	if code, _ := h.do(http.MethodGet, backupPath, "", ""); code != http.StatusUnauthorized {
		t.Errorf("GET %s without a token = %d; want 401", backupPath, code)
	}
	if code, _ := h.do(http.MethodGet, backupPath, h.joinToken(), ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("GET %s with a join token = %d; want 401 or 403", backupPath, code)
	}
	body := h.mustDo(http.MethodGet, backupPath, h.adminToken(), "", http.StatusOK)
	path := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(context.Background(), storage.Options{Path: path})
	if err != nil {
		t.Fatalf("open the downloaded backup: %v", err)
	}
	defer st.Close()
	if st.Revision() == 0 {
		t.Errorf("backup revision = 0; want the server's bootstrap writes")
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(h.info.AdminTokenPath), ".backup-*"))
	if len(left) > 0 {
		t.Errorf("backup left %q behind", left)
	}
}
