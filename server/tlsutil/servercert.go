package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"github.com/skiffhq/skiff/internal/atomicfile"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// RenewBefore is how long before its expiry a serving certificate is
// re-issued.
const RenewBefore = 90 * 24 * time.Hour

// EnsureServerCert returns the serving certificate in dir/server.crt and
// dir/server.key, first issuing a new one signed by ca (and replacing both
// files) when reissueReason finds a reason to: a missing file, expiry
// within RenewBefore, a validity that has not begun, another issuer, a
// key that does not match, or a wanted SAN it lacks. sans is normalized
// (see SANs.Normalize), so the loopback names are always covered; extra
// SANs an existing certificate has are no reason to re-issue.
//
// A file that exists but cannot be parsed is an error naming it. The
// returned certificate has Leaf set. Callers serialize calls per dir;
// ServerCert does so for a running server.
func EnsureServerCert(dir string, ca *CA, sans SANs, clk clock.Clock) (*tls.Certificate, error) {
	return ensureServerCert(dir, ca, sans, clock.Or(clk).Now())
}

// ensureServerCert is EnsureServerCert at a given time.
func ensureServerCert(dir string, ca *CA, sans SANs, now time.Time) (*tls.Certificate, error) {
	if ca == nil {
		return nil, errors.New("tls: EnsureServerCert: nil CA")
	}
	want := sans.Normalize()
	certPath, keyPath := filepath.Join(dir, ServerCertFile), filepath.Join(dir, ServerKeyFile)
	cur, err := loadServerCert(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	if reissueReason(cur, ca, want, now) == "" {
		return cur, nil
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("tls: create %s: %w", dir, err)
	}
	return issueServerCert(certPath, keyPath, ca, want, now)
}

// loadServerCert reads the pair, returning nil and no error when either
// file is missing. A key that does not match the certificate (as after a
// crash between the two writes) yields a certificate with a nil
// PrivateKey, which reissueReason reports.
func loadServerCert(certPath, keyPath string) (*tls.Certificate, error) {
	certPEM, err := readOptional(certPath)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	keyPEM, err := readOptional(keyPath)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	if certPEM == nil || keyPEM == nil {
		return nil, nil
	}
	leaf, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("tls: %s: %w", certPath, err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls: %s: %w", keyPath, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{leaf.Raw}, Leaf: leaf}
	if key.PublicKey.Equal(leaf.PublicKey) {
		c.PrivateKey = key
	}
	return c, nil
}

// Reasons reissueReason gives. They are constant so tests and callers can
// compare them; a missing SAN is reported with the names appended.
const (
	reasonMissing     = "no certificate"
	reasonKeyMismatch = "key does not match certificate"
	reasonIssuer      = "not signed by the current CA"
	reasonNotYetValid = "not valid yet"
	reasonExpiring    = "expires within the renewal window"
	reasonSANs        = "does not cover"
)

// reissueReason says why c must be replaced at now, or "" to keep it. It
// is a pure function of its arguments; want must be normalized.
func reissueReason(c *tls.Certificate, ca *CA, want SANs, now time.Time) string {
	if c == nil || c.Leaf == nil {
		return reasonMissing
	}
	if c.PrivateKey == nil {
		return reasonKeyMismatch
	}
	leaf := c.Leaf
	if leaf.CheckSignatureFrom(ca.Cert) != nil {
		return reasonIssuer
	}
	if now.Before(leaf.NotBefore) {
		return reasonNotYetValid
	}
	if !now.Before(leaf.NotAfter.Add(-RenewBefore)) {
		return reasonExpiring
	}
	if m := want.missing(leaf.DNSNames, leaf.IPAddresses); len(m) > 0 {
		return reasonSANs + " " + strings.Join(m, ", ")
	}
	return ""
}

// issueServerCert makes a new key and certificate for want, valid from now
// (backdated) for ServerCertValidity but never past the CA, and writes both
// files, the key first: a crash in between leaves a mismatched pair that
// the next call replaces.
func issueServerCert(certPath, keyPath string, ca *CA, want SANs, now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls: generate server key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(ServerCertValidity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "skiff-server"},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     want.DNSNames,
		IPAddresses:  want.netIPs(),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("tls: sign server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tls: parse new server certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Replace(keyPath, keyPEM, keyFileMode); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	if err := atomicfile.Replace(certPath, encodeCert(der), certFileMode); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
