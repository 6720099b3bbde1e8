package cgroups

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

func TestReadKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "memory.stat")
	body := "cache 4096\nrss 12\ntotal_rss 777\nbad line\nnovalue \ntotal_inactive_file x\ntotal_inactive_file 5\noom_kill_disable 1\noom_kill 3"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	vals, found, err := readKeys(file, "total_inactive_file", "total_rss", "oom_kill", "absent")
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{5, 777, 3, 0}; !reflect.DeepEqual(vals, want) {
		t.Errorf("values = %v; want %v (the line that parses, the last line without a newline, 0 for a missing key)", vals, want)
	}
	if want := []bool{true, true, true, false}; !reflect.DeepEqual(found, want) {
		t.Errorf("found = %v; want %v", found, want)
	}
	if _, _, err := readKeys(filepath.Join(t.TempDir(), "none"), "x"); !os.IsNotExist(err) {
		t.Errorf("missing file: err = %v; want not-exist", err)
	}
}

// TestSubdirsMatchesReadDir: subdirs lists what os.ReadDir lists as
// directories, sorted, over more entries than one getdents buffer holds.
func TestSubdirsMatchesReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 300; i++ {
		name := filepath.Join(dir, "entry-with-a-longish-name-"+string(rune('a'+i%26))+"-"+strconv.Itoa(i))
		var err error
		if i%3 == 0 {
			err = os.Mkdir(name, 0o700)
		} else {
			err = os.WriteFile(name, nil, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dir, filepath.Join(dir, "link-to-dir")); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range ents {
		if e.IsDir() {
			want = append(want, e.Name())
		}
	}
	got, err := subdirs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("subdirs = %d names %v…; want os.ReadDir's %d directories %v…", len(got), head(got), len(want), head(want))
	}
	if got, err := subdirs(filepath.Join(dir, "missing")); err != nil || got != nil {
		t.Fatalf("subdirs(missing) = %v, %v; want none, no error", got, err)
	}
}

func head(s []string) []string { return s[:min(len(s), 3)] }

// dirent builds one linux_dirent64 record.
func dirent(name string, typ byte) []byte {
	reclen := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, reclen)
	binary.NativeEndian.PutUint16(b[16:18], uint16(reclen))
	b[18] = typ
	copy(b[19:], name)
	return b
}

func TestAppendDirents(t *testing.T) {
	var b []byte
	for _, e := range []struct {
		name string
		typ  byte
	}{{".", 4}, {"..", 4}, {"pod-a", 4}, {"memory.stat", 8}, {"odd", 0}, {"pod-b", 4}} {
		b = append(b, dirent(e.name, e.typ)...)
	}
	dirs, unknown := appendDirents(nil, nil, b)
	if !slices.Equal(dirs, []string{"pod-a", "pod-b"}) || !slices.Equal(unknown, []string{"odd"}) {
		t.Fatalf("dirs %v, unknown %v; want [pod-a pod-b] and [odd]", dirs, unknown)
	}
	// A record claiming more than the buffer ends the walk.
	bad := dirent("pod-c", 4)
	binary.NativeEndian.PutUint16(bad[16:18], 200)
	if dirs, _ := appendDirents(nil, nil, append(dirent("pod-a", 4), bad...)); !slices.Equal(dirs, []string{"pod-a"}) {
		t.Fatalf("dirs %v; want [pod-a], the bad record dropped", dirs)
	}
}

// FuzzAppendDirents: any bytes are walked without a panic, and every name
// returned is non-empty and free of NUL.
func FuzzAppendDirents(f *testing.F) {
	f.Add(append(dirent("a", 4), dirent("b", 8)...))
	f.Add([]byte{})
	f.Add(make([]byte, 19))
	f.Fuzz(func(t *testing.T, b []byte) {
		dirs, unknown := appendDirents(nil, nil, b)
		for _, n := range append(dirs, unknown...) {
			if n == "" || slices.Contains([]byte(n), 0) || n == "." || n == ".." {
				t.Fatalf("name %q", n)
			}
		}
	})
}

// FuzzParseKeys: any file content parses without a panic.
func FuzzParseKeys(f *testing.F) {
	f.Add([]byte("total_rss 1\ntotal_inactive_file 2\n"))
	f.Add([]byte(" \n\n x y z\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys := []string{"total_rss", "total_inactive_file", ""}
		vals, found := make([]uint64, len(keys)), make([]bool, len(keys))
		parseKeys(b, keys, vals, found)
		for i := range keys {
			if !found[i] && vals[i] != 0 {
				t.Fatalf("key %q not found but value %d", keys[i], vals[i])
			}
		}
	})
}
