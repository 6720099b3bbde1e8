package storage_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// makeDB writes a real store with n objects at path and closes it.
func makeDB(t *testing.T, path string, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := storage.Open(ctx, storage.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := s.Create(ctx, storagetest.Pod("default", fmt.Sprint("p", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// rawExec runs statements on path with a plain SQLite connection.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestSQLiteOpenRefusesBadFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error
	}{
		{"garbage", func(t *testing.T, path string) {
			os.WriteFile(path, garbage(64<<10), 0o600)
		}, storage.ErrCorrupt},
		{"short garbage", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("hello"), 0o600)
		}, storage.ErrCorrupt},
		{"truncated", func(t *testing.T, path string) {
			makeDB(t, path, 300)
			st, _ := os.Stat(path)
			if err := os.Truncate(path, st.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, storage.ErrCorrupt},
		{"overwritten pages", func(t *testing.T, path string) {
			makeDB(t, path, 300)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			for off := int64(4096); off < st.Size(); off += 4 * 4096 {
				f.WriteAt(garbage(4096), off)
			}
		}, storage.ErrCorrupt},
		{"overwritten header", func(t *testing.T, path string) {
			makeDB(t, path, 10)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f.WriteAt(garbage(100), 0)
		}, storage.ErrCorrupt},
		{"foreign SQLite", func(t *testing.T, path string) {
			rawExec(t, path, "CREATE TABLE users (name TEXT)", "INSERT INTO users VALUES ('alice')")
		}, storage.ErrIncompatible},
		{"future schema", func(t *testing.T, path string) {
			makeDB(t, path, 1)
			rawExec(t, path, "PRAGMA user_version = 99")
		}, storage.ErrIncompatible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			tt.setup(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := storage.Open(context.Background(), storage.Options{Path: path})
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) = nil; want %v", tt.name, tt.want)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Open(%s) = %v; want %v", tt.name, err, tt.want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("Open(%s) error %q does not name the file %s", tt.name, err, path)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("Open(%s) modified the file", tt.name)
			}
		})
	}
}

func TestSQLiteOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "state.db")
	s, err := storage.Open(context.Background(), storage.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, path: 0o600} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("mode of %s = %v; want %v", p, st.Mode(), want)
		}
	}
}

func TestSQLiteOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := storage.Open(context.Background(), storage.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Open(context.Background(), storage.Options{Path: path}); !errors.Is(err, storage.ErrLocked) {
		t.Errorf("second Open = %v; want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = storage.Open(context.Background(), storage.Options{Path: path})
	if err != nil {
		t.Fatalf("Open after Close = %v; want nil", err)
	}
	s.Close()
}

func TestSQLiteOpenEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := storage.Open(context.Background(), storage.Options{Path: path})
	if err != nil {
		t.Fatalf("Open(empty file) = %v; want nil", err)
	}
	defer s.Close()
	if err := s.Create(context.Background(), storagetest.Node("n", nil)); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		opts storage.Options
		ok   bool
	}{
		{"defaults", storage.Options{Path: "x.db"}, true},
		{"no path", storage.Options{}, false},
		{"negative revisions", storage.Options{Path: "x", CompactMinRevisions: -1}, false},
		{"negative age", storage.Options{Path: "x", CompactMinAge: -1}, false},
		{"huge batch", storage.Options{Path: "x", MaxBatch: 1 << 20}, false},
		{"huge batch transaction", storage.Options{Path: "x", MaxBatchTxn: 1 << 20}, false},
		{"negative batch transaction", storage.Options{Path: "x", MaxBatchTxn: -1}, false},
		{"negative buffer", storage.Options{Path: "x", WatchBuffer: -1}, false},
		{"negative conns", storage.Options{Path: "x", ReadConns: -1}, false},
		{"loops disabled", storage.Options{Path: "x", CompactInterval: -1, CheckpointInterval: -1, WatchCacheSize: -1}, true},
	}
	for _, tt := range tests {
		if err := tt.opts.Validate(); (err == nil) != tt.ok {
			t.Errorf("Options{%s}.Validate() = %v; want ok=%v", tt.name, err, tt.ok)
		}
	}
}
