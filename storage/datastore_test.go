package storage_test

import (
	"strings"
	"testing"

	"github.com/skiffhq/skiff/storage"
)

func TestParseDatastore(t *testing.T) {
	tests := []struct {
		in           string
		path, pg     string
		wantErr      string
		redactedHide string
	}{
		{in: "sqlite:///var/lib/skiff/state.db", path: "/var/lib/skiff/state.db"},
		{in: "sqlite://rel/state.db", path: "rel/state.db"},
		{in: "sqlite://", wantErr: "path is empty"},
		{in: "postgres://skiff:s3cret@db:5432/skiff?sslmode=verify-full", pg: "postgres://skiff:s3cret@db:5432/skiff?sslmode=verify-full", redactedHide: "s3cret"},
		{in: "postgresql://skiff@db/skiff", pg: "postgresql://skiff@db/skiff"},
		{in: "postgres://skiff:s3cret@db:5432", wantErr: "database name", redactedHide: "s3cret"},
		{in: "postgres://skiff:s3cret@db:5432/", wantErr: "database name", redactedHide: "s3cret"},
		{in: "mysql://x/y", wantErr: "want sqlite://"},
		{in: "", wantErr: "want sqlite://"},
	}
	for _, tt := range tests {
		o, err := storage.ParseDatastore(tt.in)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseDatastore(%q) = %v; want an error containing %q", tt.in, err, tt.wantErr)
			}
			if err != nil && tt.redactedHide != "" && strings.Contains(err.Error(), tt.redactedHide) {
				t.Errorf("ParseDatastore(%q) error %q shows the password", tt.in, err)
			}
		case err != nil || o.Path != tt.path || o.Postgres != tt.pg:
			t.Errorf("ParseDatastore(%q) = {Path: %q, Postgres: %q}, %v; want {%q, %q}, nil", tt.in, o.Path, o.Postgres, err, tt.path, tt.pg)
		}
		if tt.redactedHide != "" && strings.Contains(storage.Redact(tt.in), tt.redactedHide) {
			t.Errorf("Redact(%q) = %q; shows the password", tt.in, storage.Redact(tt.in))
		}
	}
}

// FuzzParseDatastore: any string parses or fails cleanly, and neither
// the error nor Redact ever shows a password.
func FuzzParseDatastore(f *testing.F) {
	for _, s := range []string{"sqlite:///x", "postgres://u:pw@h:1/db?sslmode=disable", "postgresql://u@h/d", "postgres://u:pw@[::1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := storage.ParseDatastore(s)
		if err == nil && (o.Path == "") == (o.Postgres == "") {
			t.Fatalf("ParseDatastore(%q) = %+v; want exactly one of Path and Postgres", s, o)
		}
		const pw = "hunter2secret"
		u := "postgres://user:" + pw + "@" + s
		if _, err := storage.ParseDatastore(u); err != nil && strings.Contains(err.Error(), pw) {
			t.Fatalf("ParseDatastore(%q) error shows the password: %v", u, err)
		}
		if strings.Contains(storage.Redact(u), pw) {
			t.Fatalf("Redact(%q) = %q; shows the password", u, storage.Redact(u))
		}
	})
}
