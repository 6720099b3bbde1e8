package storage

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/storage/internal/fixtures"
)

// TestFieldHintSkipsRowsInTheDatabase: a list whose field selector has a
// hint (an Equals of a plain value) leaves rows without it in the
// database: a row whose stored fields are unreadable, which the list
// would otherwise have to decode, does not fail it. A selector without
// a hint reads that row, and fails on it.
func TestFieldHintSkipsRowsInTheDatabase(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "state.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range []string{"keep", "broken"} {
		if err := s.Create(ctx, fixtures.ConfigMap("default", name, nil)); err != nil {
			t.Fatal(err)
		}
	}
	err = s.submit(ctx, &op{kind: opTask, task: func(ctx context.Context, w *writer) error {
		_, err := w.conn.ExecContext(ctx, `UPDATE objects SET fields = ? WHERE name = 'broken'`, []byte("not json"))
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	list := func(sel string) ([]string, error) {
		t.Helper()
		fs, err := fields.Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		_, err = s.Scan(ctx, "configmaps", ListOptions{Fields: fs}, func(v []byte) error {
			names = append(names, string(v))
			return nil
		})
		return names, err
	}
	if got, err := list("metadata.name=keep"); err != nil || len(got) != 1 {
		t.Errorf("list metadata.name=keep = %d objects, %v; want 1 and the broken row left in the database", len(got), err)
	}
	if _, err := list("metadata.name!=keep"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("list metadata.name!=keep = %v; want ErrCorrupt (no hint: the broken row is read)", err)
	}
}

func TestFieldHint(t *testing.T) {
	for _, tt := range []struct{ sel, skip, want string }{
		{"", "", ""},
		{"spec.nodeName=n1", "", `"spec.nodeName":"n1"`},
		{"spec.nodeName!=n1", "", ""},
		{"spec.nodeName=", "", ""},
		{"spec.nodeName!=n1,status.phase=Running", "", `"status.phase":"Running"`},
		{"metadata.name=a<b", "", ""},
		{"metadata.name=a<b,type=t", "", `"type":"t"`},
		{"spec.nodeName=n1", "spec.nodeName", ""},
		{"spec.nodeName=n1,status.phase=Running", "spec.nodeName", `"status.phase":"Running"`},
	} {
		sel, err := fields.Parse(tt.sel)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(fieldHint(sel, tt.skip)); got != tt.want {
			t.Errorf("fieldHint(%q, skip %q) = %q; want %q", tt.sel, tt.skip, got, tt.want)
		}
	}
}
