package storage_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

func TestSQLiteResourceRevision(t *testing.T) {
	ctx := context.Background()
	s := storagetest.Open(t, storage.Options{})
	if got := s.ResourceRevision("configmaps"); got != 0 {
		t.Fatalf("ResourceRevision(configmaps) on a fresh store = %d; want 0", got)
	}
	cm := storagetest.ConfigMap("default", "a", nil)
	if err := s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	rev, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	if got := s.ResourceRevision("configmaps"); got != rev {
		t.Errorf("ResourceRevision(configmaps) after a create = %d; want %d", got, rev)
	}
	if got := s.ResourceRevision("pods"); got != 0 {
		t.Errorf("ResourceRevision(pods) = %d; want 0 (no pod changed)", got)
	}
	out, err := s.Delete(ctx, "configmaps", "default", "a", "")
	if err != nil {
		t.Fatal(err)
	}
	rev, _ = strconv.ParseInt(out.GetObjectMeta().ResourceVersion, 10, 64)
	if got := s.ResourceRevision("configmaps"); got != rev {
		t.Errorf("ResourceRevision(configmaps) after a delete = %d; want %d", got, rev)
	}
	if got := s.ResourceRevision("widgets"); got != 0 {
		t.Errorf("ResourceRevision(widgets) = %d; want 0", got)
	}
}
