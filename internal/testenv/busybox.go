package testenv

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"testing"
	"time"
)

// BusyboxRef is the name BusyboxImage's image is imported under.
const BusyboxRef = "skiff.test/busybox:latest"

// busyboxApplets get a symlink to /bin/busybox in the image.
var busyboxApplets = []string{
	"[", "awk", "basename", "cat", "chmod", "cp", "cut", "date", "dd", "df", "dirname", "du",
	"echo", "env", "expr", "false", "find", "free", "grep", "head", "hostname", "id",
	"ifconfig", "ip", "kill", "ln", "ls", "mkdir", "mktemp", "mount", "mv", "nc", "nproc",
	"printf", "ps", "pwd", "readlink", "rm", "rmdir", "sed", "seq", "sh", "sleep", "sort",
	"stat", "tail", "tee", "test", "timeout", "top", "touch", "tr", "true", "uname", "usleep",
	"wc", "wget", "whoami", "xargs", "yes", "tar", "stty",
}

var (
	busyboxOnce sync.Once
	busyboxPath string
	busyboxErr  error
)

// BusyboxImage returns an OCI image-layout tarball of a busybox image
// made from the host's static /bin/busybox (Debian's busybox-static), and
// the ref containerd's import names it (BusyboxRef). The image has one
// uncompressed layer with busybox, its applet links in /bin, /etc/passwd
// and /etc/group, and runs "sh" by default. Its content is the same on
// every build from the same busybox. It is built once per test process and kept in the
// temporary directory under a name derived from its content.
func BusyboxImage(t testing.TB) (tarPath, ref string) {
	t.Helper()
	busyboxOnce.Do(func() {
		busyboxPath, busyboxErr = buildBusybox()
	})
	if busyboxErr != nil {
		t.Fatalf("build busybox image: %v", busyboxErr)
	}
	return busyboxPath, BusyboxRef
}

func buildBusybox() (string, error) {
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return "", fmt.Errorf("%w (install Debian's busybox-static)", err)
	}
	if err := requireStatic("/bin/busybox"); err != nil {
		return "", err
	}
	layer, err := busyboxLayer(bin)
	if err != nil {
		return "", err
	}
	data, err := ociLayout(layer, BusyboxRef)
	if err != nil {
		return "", err
	}
	// Named by content, so test processes share one file per busybox
	// build instead of leaving one each behind.
	p := filepath.Join(os.TempDir(), "skiff-busybox-"+digestOf(data)[len("sha256:"):][:16]+".tar")
	if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, data) {
		return p, nil
	}
	tmp, err := os.CreateTemp(os.TempDir(), "skiff-busybox-*.tmp")
	if err != nil {
		return "", err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return p, nil
}

// requireStatic rejects a dynamically linked busybox: the image has no
// libc for it.
func requireStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: install Debian's busybox-static", path)
		}
	}
	return nil
}

// epoch is every entry's mtime, so the layer is byte-for-byte stable.
var epoch = time.Unix(946684800, 0).UTC() // 2000-01-01

func busyboxLayer(bin []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := func(h *tar.Header) error {
		h.ModTime, h.Format = epoch, tar.FormatPAX
		h.Uname, h.Gname = "", ""
		return tw.WriteHeader(h)
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"dev/", 0o755}, {"etc/", 0o755}, {"proc/", 0o555}, {"root/", 0o700}, {"sys/", 0o555}, {"tmp/", 0o1777}, {"var/", 0o755}} {
		if err := hdr(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode}); err != nil {
			return nil, err
		}
	}
	if err := hdr(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bin))}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	for _, a := range busyboxApplets {
		if err := hdr(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777}); err != nil {
			return nil, err
		}
	}
	files := []struct{ name, body string }{
		{"etc/passwd", "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"},
		{"etc/group", "root:x:0:\nnogroup:x:65534:\n"},
	}
	for _, f := range files {
		if err := hdr(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.body))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// ociLayout writes the OCI image layout (oci-layout, index.json, blobs)
// of a one-layer image named ref as a tar.
func ociLayout(layer []byte, ref string) ([]byte, error) {
	config, err := json.Marshal(map[string]any{
		"architecture": goruntime.GOARCH,
		"os":           "linux",
		"created":      epoch.Format(time.RFC3339),
		"config": map[string]any{
			"Env":        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			"Cmd":        []string{"sh"},
			"WorkingDir": "/",
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digestOf(layer)}},
	})
	if err != nil {
		return nil, err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digestOf(config), Size: int64(len(config))},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: digestOf(layer), Size: int64(len(layer))}},
	})
	if err != nil {
		return nil, err
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []descriptor{{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: digestOf(manifest), Size: int64(len(manifest)),
			Annotations: map[string]string{"org.opencontainers.image.ref.name": ref},
		}},
	})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, body []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(body)
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "blobs/sha256/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	for _, b := range [][]byte{config, manifest, layer} {
		if err := add("blobs/sha256/"+digestOf(b)[len("sha256:"):], b); err != nil {
			return nil, err
		}
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return nil, err
	}
	if err := add("index.json", index); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
