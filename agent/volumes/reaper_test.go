package volumes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

type volumeSet map[string]error // name → error to return; absent = deleted

func (v volumeSet) VolumeExists(_ context.Context, name string) (bool, error) {
	err, ok := v[name]
	if !ok {
		return false, nil
	}
	return err == nil, err
}

func TestReaperRemovesDeletedVolumesOnly(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"pvc-kept_ns_a", "pvc-gone_ns_b", "pvc-unknown_ns_c", "other", "pvc-nounderscore"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	r := &Reaper{Dir: dir, Volumes: volumeSet{"pvc-kept": nil, "pvc-unknown": errors.New("server away")}}
	removed, err := r.Sweep(context.Background())
	if !slices.Equal(removed, []string{"pvc-gone_ns_b"}) || err == nil {
		t.Fatalf("Sweep() = %v, %v; want pvc-gone_ns_b removed and the check error reported", removed, err)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if want := []string{"other", "pvc-kept_ns_a", "pvc-nounderscore", "pvc-unknown_ns_c"}; !slices.Equal(names, want) {
		t.Errorf("left = %v; want %v", names, want)
	}
	if removed, err := (&Reaper{Dir: filepath.Join(dir, "absent"), Volumes: volumeSet{}}).Sweep(context.Background()); removed != nil || err != nil {
		t.Errorf("Sweep(missing dir) = %v, %v; want nothing", removed, err)
	}
}
