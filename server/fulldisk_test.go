package server

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// mountTmpfs mounts a tmpfs of size (like "24m") on a new temporary
// directory and unmounts it at the end of the test. It needs root, which
// the test suite runs as (CI too).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount tmpfs (the test needs root): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes a file under dir until the file system is full.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// TestDeleteOnFullDiskRealTmpfs is defect 7 of issue 16: on a full disk
// DELETE answered 507 too, with reason InternalError, so space could not
// be freed through the API. It also checks defect 6 on a real full disk:
// the server starts again.
func TestDeleteOnFullDiskRealTmpfs(t *testing.T) {
	dir := mountTmpfs(t, "32m")
	h := startHarness(t, dir, nil)
	admin := h.adminToken()
	pad := strings.Repeat("x", 100<<10)
	for _, name := range []string{"victim", "second"} {
		h.mustDo("POST", "/api/v1/namespaces/default/configmaps", admin, fmt.Sprintf(`{"metadata":{"name":%q},"data":{"k":%q}}`, name, pad), http.StatusCreated)
	}
	fillDisk(t, dir)
	// Writes fail once SQLite's files can grow no more.
	var code int
	var b []byte
	for i := range 200 {
		code, b = h.do("POST", "/api/v1/namespaces/default/configmaps", admin, fmt.Sprintf(`{"metadata":{"name":"fill%d"},"data":{"k":%q}}`, i, pad))
		if code != http.StatusCreated {
			break
		}
	}
	if code != http.StatusInsufficientStorage {
		t.Fatalf("create on a full disk = %d %s; want 507", code, b)
	}
	if st := statusOf(t, b); st.Reason != api.StatusReasonInsufficientStorage {
		t.Errorf("create on a full disk: reason %q; want %q", st.Reason, api.StatusReasonInsufficientStorage)
	}
	h.mustDo("DELETE", "/api/v1/namespaces/default/configmaps/victim", admin, "", http.StatusOK)
	h.mustDo("DELETE", "/api/v1/namespaces/default/configmaps/second", admin, "", http.StatusOK)
	h.mustDo("GET", "/api/v1/namespaces/default/configmaps/victim", admin, "", http.StatusNotFound)

	// The disk is still full; the server starts again all the same.
	if err := h.stop(); err != nil {
		t.Fatalf("stop on a full disk: %v", err)
	}
	h2 := startHarness(t, dir, nil)
	h2.mustDo("GET", "/api/v1/namespaces/default/configmaps/second", admin, "", http.StatusNotFound)
}
