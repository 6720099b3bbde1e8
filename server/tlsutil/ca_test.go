package tlsutil

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("mode of %s = %v; want %v", filepath.Base(path), got, want)
	}
}

func TestEnsureCACreates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	ca, err := EnsureCA(dir, clock.NewFake(t0))
	if err != nil {
		t.Fatalf("EnsureCA: %v", err)
	}
	wantMode(t, dir, 0o700)
	wantMode(t, filepath.Join(dir, CACertFile), 0o644)
	wantMode(t, filepath.Join(dir, CAKeyFile), 0o600)

	onDisk := readFile(t, filepath.Join(dir, CACertFile))
	if !bytes.Equal(ca.CertPEM, onDisk) {
		t.Error("CA.CertPEM differs from ca.crt on disk")
	}
	if got, want := ca.Hash(), CAHash(onDisk); got != want {
		t.Errorf("Hash() = %q; want CAHash(ca.crt) = %q", got, want)
	}
	c := ca.Cert
	if !c.IsCA || c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA cert IsCA=%v KeyUsage=%v; want a signing CA", c.IsCA, c.KeyUsage)
	}
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("CA key is %T; want ECDSA P-256", c.PublicKey)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("CA is not self-signed: %v", err)
	}
	if got, want := c.NotAfter, t0.Add(CAValidity); !got.Equal(want) {
		t.Errorf("CA NotAfter = %v; want %v", got, want)
	}
	if !c.NotBefore.Before(t0) {
		t.Errorf("CA NotBefore = %v; want before %v (backdated)", c.NotBefore, t0)
	}
}

func TestEnsureCAReloadKeepsBytes(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	first, err := EnsureCA(dir, clk)
	if err != nil {
		t.Fatal(err)
	}
	crt, key := readFile(t, filepath.Join(dir, CACertFile)), readFile(t, filepath.Join(dir, CAKeyFile))
	clk.Advance(365 * 24 * time.Hour)
	second, err := EnsureCA(dir, clk)
	if err != nil {
		t.Fatalf("EnsureCA (reload): %v", err)
	}
	if !bytes.Equal(first.CertPEM, second.CertPEM) || first.Hash() != second.Hash() {
		t.Error("reloaded CA differs from the created one")
	}
	if !second.Key.Equal(first.Key) {
		t.Error("reloaded CA key differs from the created one")
	}
	if !bytes.Equal(crt, readFile(t, filepath.Join(dir, CACertFile))) || !bytes.Equal(key, readFile(t, filepath.Join(dir, CAKeyFile))) {
		t.Error("reload rewrote ca.crt or ca.key")
	}
}

// writeCAFiles writes a hand-made certificate and key to dir.
func writeCAFiles(t *testing.T, dir string, tmpl *x509.Certificate, signKey *ecdsa.PrivateKey, fileKey *ecdsa.PrivateKey) {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &signKey.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := encodeKey(fileKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CACertFile), encodeCert(der), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CAKeyFile), kb, 0o600); err != nil {
		t.Fatal(err)
	}
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestEnsureCARefusesBadFiles(t *testing.T) {
	good := func() (*x509.Certificate, *ecdsa.PrivateKey) {
		return &x509.Certificate{
			SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "t"},
			NotBefore: t0.Add(-time.Hour), NotAfter: t0.Add(time.Hour),
			KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		}, newKey(t)
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantErr string // a substring: the file at fault
	}{
		{"only ca.crt", func(t *testing.T, dir string) {
			_ = os.WriteFile(filepath.Join(dir, CACertFile), []byte("x"), 0o644)
		}, CAKeyFile + " is missing"},
		{"only ca.key", func(t *testing.T, dir string) {
			_ = os.WriteFile(filepath.Join(dir, CAKeyFile), []byte("x"), 0o600)
		}, CACertFile + " is missing"},
		{"corrupt ca.crt", func(t *testing.T, dir string) {
			tmpl, k := good()
			writeCAFiles(t, dir, tmpl, k, k)
			_ = os.WriteFile(filepath.Join(dir, CACertFile), []byte("-----BEGIN CERTIFICATE-----\ngarbage\n"), 0o644)
		}, CACertFile + ": "},
		{"truncated ca.crt", func(t *testing.T, dir string) {
			tmpl, k := good()
			writeCAFiles(t, dir, tmpl, k, k)
			b := readFile(t, filepath.Join(dir, CACertFile))
			_ = os.WriteFile(filepath.Join(dir, CACertFile), b[:len(b)/2], 0o644)
		}, CACertFile + ": "},
		{"corrupt ca.key", func(t *testing.T, dir string) {
			tmpl, k := good()
			writeCAFiles(t, dir, tmpl, k, k)
			_ = os.WriteFile(filepath.Join(dir, CAKeyFile), []byte("not a key"), 0o600)
		}, CAKeyFile + ": "},
		{"key of another CA", func(t *testing.T, dir string) {
			tmpl, k := good()
			writeCAFiles(t, dir, tmpl, k, newKey(t))
		}, CAKeyFile + " does not match"},
		{"not a CA", func(t *testing.T, dir string) {
			tmpl, k := good()
			tmpl.IsCA, tmpl.KeyUsage = false, x509.KeyUsageDigitalSignature
			writeCAFiles(t, dir, tmpl, k, k)
		}, CACertFile + " is not a CA"},
		{"expired", func(t *testing.T, dir string) {
			tmpl, k := good()
			tmpl.NotBefore, tmpl.NotAfter = t0.Add(-2*time.Hour), t0
			writeCAFiles(t, dir, tmpl, k, k)
		}, CACertFile + " expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			before := snapshot(t, dir)
			_, err := EnsureCA(dir, clock.NewFake(t0))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("EnsureCA(%s) = %v; want an error containing %q", tt.name, err, tt.wantErr)
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("EnsureCA(%s) changed the directory:\n%s\nwant\n%s", tt.name, after, before)
			}
		})
	}
}

// snapshot lists dir's files with their contents' hashes.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		b.WriteString(e.Name() + " " + CAHash(readFile(t, filepath.Join(dir, e.Name()))) + "\n")
	}
	return b.String()
}

func TestEnsureCAAcceptsPKCS8Key(t *testing.T) {
	dir := t.TempDir()
	ca, err := EnsureCA(dir, clock.NewFake(t0))
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CAKeyFile), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCA(dir, clock.NewFake(t0)); err != nil {
		t.Errorf("EnsureCA with a PKCS #8 key = %v; want nil", err)
	}
}

func TestCAHash(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	for _, tt := range tests {
		if got := CAHash([]byte(tt.in)); got != tt.want {
			t.Errorf("CAHash(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
