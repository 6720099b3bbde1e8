package tlsutil

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// fixture is a TLS directory with a CA, at t0 on a fake clock.
type fixture struct {
	dir string
	clk *clock.Fake
	ca  *CA
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), clk: clock.NewFake(t0)}
	ca, err := EnsureCA(f.dir, f.clk)
	if err != nil {
		t.Fatal(err)
	}
	f.ca = ca
	return f
}

func (f *fixture) ensure(t *testing.T, sans SANs) *tls.Certificate {
	t.Helper()
	c, err := EnsureServerCert(f.dir, f.ca, sans, f.clk)
	if err != nil {
		t.Fatalf("EnsureServerCert: %v", err)
	}
	return c
}

func (f *fixture) files(t *testing.T) []byte {
	t.Helper()
	return slices.Concat(readFile(t, filepath.Join(f.dir, ServerCertFile)), readFile(t, filepath.Join(f.dir, ServerKeyFile)))
}

var extraSANs = SANs{DNSNames: []string{"Skiff.Example.com."}, IPs: []netip.Addr{netip.MustParseAddr("192.0.2.10")}}

func TestEnsureServerCertCreates(t *testing.T) {
	f := newFixture(t)
	c := f.ensure(t, extraSANs)
	wantMode(t, filepath.Join(f.dir, ServerCertFile), 0o644)
	wantMode(t, filepath.Join(f.dir, ServerKeyFile), 0o600)

	leaf := c.Leaf
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || pub.Curve != elliptic.P256() {
		t.Errorf("server key is %T; want ECDSA P-256", leaf.PublicKey)
	}
	if got, want := leaf.NotAfter, t0.Add(ServerCertValidity); !got.Equal(want) {
		t.Errorf("NotAfter = %v; want %v", got, want)
	}
	// The pair on disk is what tls would load and matches the returned one.
	disk, err := tls.LoadX509KeyPair(filepath.Join(f.dir, ServerCertFile), filepath.Join(f.dir, ServerKeyFile))
	if err != nil {
		t.Fatalf("LoadX509KeyPair: %v", err)
	}
	if !bytes.Equal(disk.Certificate[0], c.Certificate[0]) {
		t.Error("server.crt differs from the returned certificate")
	}
	for _, host := range []string{"127.0.0.1", "localhost", "::1", "skiff.example.com", "192.0.2.10"} {
		_, err := leaf.Verify(x509.VerifyOptions{
			DNSName:     host,
			Roots:       f.ca.Pool(),
			CurrentTime: f.clk.Now(),
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			t.Errorf("Verify(%q) = %v; want nil", host, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example.com", Roots: f.ca.Pool(), CurrentTime: f.clk.Now()}); err == nil {
		t.Error(`Verify("other.example.com") = nil; want a name mismatch`)
	}
}

func TestEnsureServerCertHandshake(t *testing.T) {
	f := newFixture(t)
	sc, err := NewServerCert(f.dir, f.ca, SANs{}, f.clk)
	if err != nil {
		t.Fatal(err)
	}
	// A real handshake over a pipe, verified against the CA for each
	// loopback name, with the fake clock's time on both ends.
	for _, name := range []string{"127.0.0.1", "localhost"} {
		cli, srv := net.Pipe()
		errc := make(chan error, 1)
		go func() {
			s := tls.Server(srv, &tls.Config{GetCertificate: sc.GetCertificate, Time: f.clk.Now})
			errc <- s.Handshake()
			srv.Close() // not s.Close: a close_notify would block on the pipe
		}()
		c := tls.Client(cli, &tls.Config{ServerName: name, RootCAs: f.ca.Pool(), Time: f.clk.Now})
		if err := c.Handshake(); err != nil {
			t.Errorf("handshake as %q = %v; want nil", name, err)
		}
		cli.Close()
		if err := <-errc; err != nil {
			t.Errorf("server handshake for %q = %v", name, err)
		}
	}
}

func TestEnsureServerCertReloadKeepsBytes(t *testing.T) {
	f := newFixture(t)
	first := f.ensure(t, extraSANs)
	before := f.files(t)
	f.clk.Advance(200 * 24 * time.Hour)
	// The same SANs in another order and spelling are the same set.
	again := f.ensure(t, SANs{DNSNames: []string{"skiff.example.com", "LOCALHOST"}, IPs: []netip.Addr{netip.MustParseAddr("::ffff:192.0.2.10")}})
	if !bytes.Equal(first.Certificate[0], again.Certificate[0]) {
		t.Error("reload returned a different certificate")
	}
	if !bytes.Equal(before, f.files(t)) {
		t.Error("reload rewrote server.crt or server.key")
	}
	// A subset of the covered SANs is no reason to re-issue either.
	f.ensure(t, SANs{})
	if !bytes.Equal(before, f.files(t)) {
		t.Error("fewer SANs rewrote server.crt or server.key")
	}
}

func TestEnsureServerCertRenewsNearExpiry(t *testing.T) {
	f := newFixture(t)
	first := f.ensure(t, SANs{})
	renewAt := first.Leaf.NotAfter.Add(-RenewBefore)

	f.clk.Set(renewAt.Add(-time.Second))
	if c := f.ensure(t, SANs{}); !bytes.Equal(c.Certificate[0], first.Certificate[0]) {
		t.Fatalf("re-issued at %v, a second before the renewal window", f.clk.Now())
	}
	f.clk.Set(renewAt)
	renewed := f.ensure(t, SANs{})
	if bytes.Equal(renewed.Certificate[0], first.Certificate[0]) {
		t.Fatalf("not re-issued at %v, inside the renewal window", f.clk.Now())
	}
	if got, want := renewed.Leaf.NotAfter, renewAt.Add(ServerCertValidity); !got.Equal(want) {
		t.Errorf("renewed NotAfter = %v; want %v", got, want)
	}
	disk, err := tls.LoadX509KeyPair(filepath.Join(f.dir, ServerCertFile), filepath.Join(f.dir, ServerKeyFile))
	if err != nil || !bytes.Equal(disk.Certificate[0], renewed.Certificate[0]) {
		t.Errorf("server.crt on disk is not the renewed certificate (err %v)", err)
	}
}

func TestEnsureServerCertReissuesForNewSAN(t *testing.T) {
	f := newFixture(t)
	first := f.ensure(t, SANs{IPs: []netip.Addr{netip.MustParseAddr("10.0.0.5")}})
	// The machine got a new address by DHCP.
	c := f.ensure(t, SANs{IPs: []netip.Addr{netip.MustParseAddr("10.0.0.6")}})
	if bytes.Equal(c.Certificate[0], first.Certificate[0]) {
		t.Fatal("a SAN the certificate lacks did not re-issue it")
	}
	if !slices.ContainsFunc(c.Leaf.IPAddresses, func(ip net.IP) bool { return ip.String() == "10.0.0.6" }) {
		t.Errorf("re-issued IPs = %v; want 10.0.0.6 among them", c.Leaf.IPAddresses)
	}
}

func TestEnsureServerCertReissuesForNewCA(t *testing.T) {
	f := newFixture(t)
	first := f.ensure(t, SANs{})
	other, err := EnsureCA(t.TempDir(), f.clk)
	if err != nil {
		t.Fatal(err)
	}
	c, err := EnsureServerCert(f.dir, other, SANs{}, f.clk)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(c.Certificate[0], first.Certificate[0]) {
		t.Fatal("certificate of another CA was kept")
	}
	if err := c.Leaf.CheckSignatureFrom(other.Cert); err != nil {
		t.Errorf("re-issued certificate not signed by the new CA: %v", err)
	}
}

func TestEnsureServerCertReissuesMismatchedPair(t *testing.T) {
	f := newFixture(t)
	first := f.ensure(t, SANs{})
	// As after a crash between writing the new key and the new cert.
	kb, err := encodeKey(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, ServerKeyFile), kb, 0o600); err != nil {
		t.Fatal(err)
	}
	c := f.ensure(t, SANs{})
	if bytes.Equal(c.Certificate[0], first.Certificate[0]) {
		t.Fatal("mismatched pair was kept")
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(f.dir, ServerCertFile), filepath.Join(f.dir, ServerKeyFile)); err != nil {
		t.Errorf("pair on disk after re-issue: %v", err)
	}
}

func TestEnsureServerCertCorruptFiles(t *testing.T) {
	for _, file := range []string{ServerCertFile, ServerKeyFile} {
		t.Run(file, func(t *testing.T) {
			f := newFixture(t)
			f.ensure(t, SANs{})
			path := filepath.Join(f.dir, file)
			if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := EnsureServerCert(f.dir, f.ca, SANs{}, f.clk)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Fatalf("EnsureServerCert with a corrupt %s = %v; want an error naming it", file, err)
			}
			if got := string(readFile(t, path)); got != "garbage" {
				t.Errorf("corrupt %s was overwritten", file)
			}
		})
	}
}

func TestReissueReason(t *testing.T) {
	f := newFixture(t)
	c := f.ensure(t, extraSANs)
	want := extraSANs.Normalize()
	end := c.Leaf.NotAfter
	noKey := *c
	noKey.PrivateKey = nil
	other, err := EnsureCA(t.TempDir(), f.clk)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		c    *tls.Certificate
		ca   *CA
		want SANs
		now  time.Time
		out  string
	}{
		{"fresh", c, f.ca, want, t0, ""},
		{"missing", nil, f.ca, want, t0, reasonMissing},
		{"key mismatch", &noKey, f.ca, want, t0, reasonKeyMismatch},
		{"other CA", c, other, want, t0, reasonIssuer},
		{"clock before NotBefore", c, f.ca, want, t0.Add(-2 * time.Hour), reasonNotYetValid},
		{"just before window", c, f.ca, want, end.Add(-RenewBefore - time.Nanosecond), ""},
		{"window opens", c, f.ca, want, end.Add(-RenewBefore), reasonExpiring},
		{"expired", c, f.ca, want, end.Add(time.Hour), reasonExpiring},
		{"subset of SANs", c, f.ca, SANs{}.Normalize(), t0, ""},
		{"new name and IP", c, f.ca, SANs{DNSNames: []string{"new.example"}, IPs: []netip.Addr{netip.MustParseAddr("2001:db8::1")}}.Normalize(), t0, reasonSANs + " new.example, 2001:db8::1"},
	}
	for _, tt := range tests {
		if got := reissueReason(tt.c, tt.ca, tt.want, tt.now); got != tt.out {
			t.Errorf("reissueReason(%s) = %q; want %q", tt.name, got, tt.out)
		}
	}
}
