package storage_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/storage"
)

// BenchmarkListSecretsByType lists a fleet server's skiff-system
// namespace (10,000 node credentials) by type: every Secret matching
// (the credentials' preload), none matching (the join-token sweep: the
// database skips the rows, fieldHint), and a selector with no hint.
func BenchmarkListSecretsByType(b *testing.B) {
	ctx := context.Background()
	s, err := storage.Open(ctx, storage.Options{Path: filepath.Join(b.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var objs []api.Object
	for i := range 10000 {
		sec := &api.Secret{Type: "skiff.io/node-credential", Data: map[string][]byte{"token": []byte("0123456789abcdef0123456789abcdef")}}
		sec.Name, sec.Namespace = fmt.Sprintf("node-%05d", i), "skiff-system"
		objs = append(objs, sec)
	}
	for _, err := range s.CreateBatch(ctx, objs) {
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct{ name, sel string }{
		{"all match", "type=skiff.io/node-credential"},
		{"none match", "type=skiff.io/join-token"},
		{"no hint", "type!=skiff.io/node-credential"},
	} {
		sel, err := fields.Parse(c.sel)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := s.List(ctx, "secrets", storage.ListOptions{Namespace: "skiff-system", Fields: sel}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
