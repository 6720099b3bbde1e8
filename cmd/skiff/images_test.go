package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/internal/testenv"
)

type fakeImporter struct{ seen []string }

func (f *fakeImporter) ImportImages(_ context.Context, rd io.Reader) ([]runtime.Image, error) {
	b, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	f.seen = append(f.seen, string(b))
	if string(b) == "bad" {
		return nil, errors.New("not an image archive")
	}
	return []runtime.Image{{Ref: "docker.io/library/" + string(b) + ":1", ID: "sha256:" + string(b)}}, nil
}

func TestImportFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "bad"} {
		writeFile(t, filepath.Join(dir, n+".tar"), n)
	}
	var out bytes.Buffer
	imp := &fakeImporter{}
	err := importFiles(context.Background(), imp, []string{filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")}, &out)
	want := "imported docker.io/library/a:1 (sha256:a)\nimported docker.io/library/b:1 (sha256:b)\n"
	if err != nil || out.String() != want {
		t.Errorf("importFiles = %v, %q; want nil, %q", err, out.String(), want)
	}
	for _, tt := range []struct {
		file, want string
	}{
		{"bad.tar", "bad.tar: not an image archive"},
		{"missing.tar", "no such file"},
	} {
		err := importFiles(context.Background(), imp, []string{filepath.Join(dir, tt.file)}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("importFiles(%s) = %v; want error ~%q", tt.file, err, tt.want)
		}
	}
}

func TestImagesUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"images"}, "usage: skiff images import"},
		{[]string{"images", "list"}, "usage: skiff images import"},
		{[]string{"images", "import"}, "at least one FILE"},
	} {
		code, _, errs := runCLI(tt.args...)
		if code == 0 || !strings.Contains(errs, tt.want) {
			t.Errorf("run(%q) = %d, %q; want failure ~%q", tt.args, code, errs, tt.want)
		}
	}
}

func TestAgentSocket(t *testing.T) {
	dir := t.TempDir()
	system := filepath.Join(dir, "system.sock")
	if got, err := agentSocket("/given.sock", system, dir); got != "/given.sock" || err != nil {
		t.Errorf("agentSocket(given) = %q, %v; want /given.sock", got, err)
	}
	// A relative path (make run's ./.skiff/agent/containerd/containerd.sock)
	// is made absolute: containerd's client refused it as a URL.
	wd, _ := os.Getwd()
	if got, err := agentSocket(".skiff/c.sock", system, dir); got != filepath.Join(wd, ".skiff/c.sock") || err != nil {
		t.Errorf("agentSocket(relative) = %q, %v; want it under %s", got, err, wd)
	}
	_, err := agentSocket("", system, dir)
	if err == nil || !strings.Contains(err.Error(), "no containerd answers at "+system) || !strings.Contains(err.Error(), filepath.Join(dir, "agent", "containerd")) {
		t.Errorf("agentSocket(nothing running) = %v; want an error naming both sockets", err)
	}
	// A listening socket at the managed path is picked.
	managed := filepath.Join(dir, "agent", "containerd", "containerd.sock")
	if err := os.MkdirAll(filepath.Dir(managed), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", managed)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got, err := agentSocket("", system, dir); got != managed || err != nil {
		t.Errorf("agentSocket(managed running) = %q, %v; want %q", got, err, managed)
	}
}

// TestImagesImportRealContainerd side-loads the busybox test image into a
// containerd of the test's own.
func TestImagesImportRealContainerd(t *testing.T) {
	socket := testenv.StartContainerd(t)
	tarPath, ref := testenv.BusyboxImage(t)
	dataDir := filepath.Join(t.TempDir(), "skiff")
	code, out, errs := runCLI("images", "import", "--containerd", socket, "--data-dir", dataDir, tarPath)
	if code != 0 || !strings.HasPrefix(out, "imported "+ref+" (sha256:") {
		t.Errorf("skiff images import = %d, stdout %q, stderr %q; want 0 and \"imported %s (sha256:…)\"", code, out, errs, ref)
	}
	// An import makes nothing on the host: no agent directories (the
	// data dir may be another agent's, or none's).
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after an import, the data dir %s: %v; want it not created", dataDir, err)
	}
	if _, err := os.Stat(tarPath); err != nil {
		t.Errorf("the tarball is gone after import: %v", err)
	}
}
