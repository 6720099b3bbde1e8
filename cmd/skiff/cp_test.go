package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSplitRemote(t *testing.T) {
	for _, tc := range []struct {
		in, pod, path string
		remote        bool
	}{
		{"web:/tmp/x", "web", "/tmp/x", true},
		{"./a:b", "", "./a:b", false},
		{"/abs/path", "", "/abs/path", false},
		{":x", "", ":x", false},
		{"file.txt", "", "file.txt", false},
	} {
		pod, p, remote := splitRemote(tc.in)
		if pod != tc.pod || p != tc.path || remote != tc.remote {
			t.Errorf("splitRemote(%q) = %q, %q, %v; want %q, %q, %v", tc.in, pod, p, remote, tc.pod, tc.path, tc.remote)
		}
	}
}

func TestEntryPath(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		err        error
	}{
		{"logs", "/dst", nil},
		{"logs/", "/dst", nil},
		{"logs/a/b.txt", "/dst/a/b.txt", nil},
		{"logs/../etc/passwd", "", errUnsafe},
		{"logs/a/../../x", "", errUnsafe},
		{"/etc/passwd", "", errUnsafe},
		{"logsx/a", "", errUnsafe},
		{"other/a", "", errUnsafe},
		{"../logs/a", "", errUnsafe},
	} {
		got, err := entryPath(tc.name, "logs", "/dst")
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("entryPath(%q) = %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func FuzzEntryPath(f *testing.F) {
	for _, s := range []string{"logs/a", "logs/../x", "/x", "logs/./a/../../b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := entryPath(name, "logs", "/dst")
		if err == nil && got != "/dst" && !strings.HasPrefix(got, "/dst/") {
			t.Fatalf("entryPath(%q) = %q: outside /dst", name, got)
		}
	})
}

func TestTarRoundTrip(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "a.txt"), []byte("alpha"), 0o644)
	os.WriteFile(filepath.Join(src, "sub", "b.txt"), []byte("beta"), 0o600)
	var buf bytes.Buffer
	if err := writeTar(&buf, src, "copy"); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "out")
	n, err := readTar(&buf, "copy", dst, io.Discard)
	if err != nil || n != 4 {
		t.Fatalf("readTar = %d, %v; want 4 entries", n, err)
	}
	for p, want := range map[string]string{"a.txt": "alpha", "sub/b.txt": "beta"} {
		if b, err := os.ReadFile(filepath.Join(dst, p)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
}

func TestReadTarSkipsUnsafeEntries(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "x/../../escape.txt", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		{Name: "x/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
		{Name: "x/ok.txt", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
	} {
		tw.WriteHeader(h)
		if h.Size > 0 {
			tw.Write([]byte("z"))
		}
	}
	tw.Close()
	root := t.TempDir()
	dst := filepath.Join(root, "in", "x")
	var warn bytes.Buffer
	n, err := readTar(&buf, "x", dst, &warn)
	if err != nil || n != 1 {
		t.Fatalf("readTar = %d, %v; want 1 entry", n, err)
	}
	if _, err := os.Stat(filepath.Join(root, "escape.txt")); err == nil {
		t.Fatal("an entry escaped the destination")
	}
	if _, err := os.Lstat(filepath.Join(dst, "link")); err == nil {
		t.Fatal("a symlink was created")
	}
	if !strings.Contains(warn.String(), "escape.txt") || !strings.Contains(warn.String(), "link") {
		t.Errorf("warnings = %q; want both skipped entries named", warn.String())
	}
}
