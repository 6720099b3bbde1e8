package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateNeverReplacesAndReplaceDoes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	if err := Create(p, []byte("one"), 0o600); err != nil {
		t.Fatalf("Create() = %v", err)
	}
	if err := Create(p, []byte("two"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create(existing) = %v; want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("content after refused Create = %q; want %q", b, "one")
	}
	if err := Replace(p, []byte("three"), 0o644); err != nil {
		t.Fatalf("Replace() = %v", err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "three" || st.Mode().Perm() != 0o644 {
		t.Fatalf("after Replace: %q mode %v; want %q 0644", b, st.Mode().Perm(), "three")
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".*tmp*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}
