package tlsutil

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/skiffhq/skiff/internal/atomicfile"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// File names under the TLS directory (<data-dir>/server/tls).
const (
	CACertFile     = "ca.crt"
	CAKeyFile      = "ca.key"
	ServerCertFile = "server.crt"
	ServerKeyFile  = "server.key"
)

// Validity periods and the backdating that absorbs clock skew between the
// server and its agents (edge machines often boot with a wrong clock).
const (
	CAValidity         = 10 * 365 * 24 * time.Hour
	ServerCertValidity = 365 * 24 * time.Hour
	backdate           = time.Hour
)

// CA is the cluster's certificate authority. It is immutable after
// EnsureCA returns and safe for concurrent use.
type CA struct {
	// Cert is the parsed CA certificate.
	Cert *x509.Certificate
	// Key signs server certificates. It never leaves this process except
	// as ca.key.
	Key *ecdsa.PrivateKey
	// CertPEM is ca.crt byte for byte, as GET /cacerts serves it and as
	// CAHash hashes it.
	CertPEM []byte
}

// Hash returns CAHash(ca.CertPEM).
func (ca *CA) Hash() string { return CAHash(ca.CertPEM) }

// Pool returns a new pool holding only the CA certificate, for clients that
// verify the server.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// CAHash returns the lowercase hex SHA-256 of caPEM, the exact bytes of
// ca.crt. It is the <ca hash> field of a join token: an agent fetches
// /cacerts unverified and trusts the answer only if its hash matches.
func CAHash(caPEM []byte) string {
	sum := sha256.Sum256(caPEM)
	return hex.EncodeToString(sum[:])
}

// EnsureCA loads the CA from dir/ca.crt and dir/ca.key, or creates both
// (and dir, mode 0700) when neither exists. It never overwrites a file:
// when only one of the two exists, or either cannot be parsed, does not
// match the other, is not a CA or has expired by clk, it returns an error
// naming the file at fault. It is meant to be called once at server start.
func EnsureCA(dir string, clk clock.Clock) (*CA, error) {
	clk = clock.Or(clk)
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	certOK, err := exists(certPath)
	if err != nil {
		return nil, err
	}
	keyOK, err := exists(keyPath)
	if err != nil {
		return nil, err
	}
	switch {
	case certOK && keyOK:
		return loadCA(certPath, keyPath, clk.Now())
	case certOK:
		return nil, fmt.Errorf("tls: %s exists but %s is missing; restore it (a new CA would orphan every joined agent)", certPath, keyPath)
	case keyOK:
		return nil, fmt.Errorf("tls: %s exists but %s is missing; restore it or remove both to create a new CA", keyPath, certPath)
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("tls: create %s: %w", dir, err)
	}
	ca, keyPEM, err := newCA(clk.Now())
	if err != nil {
		return nil, err
	}
	// The key goes first: a crash in between leaves ca.key alone, which
	// the next start reports instead of pairing it with a fresh cert.
	if err := atomicfile.Create(keyPath, keyPEM, keyFileMode); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	if err := atomicfile.Create(certPath, ca.CertPEM, certFileMode); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return ca, nil
}

// newCA makes a self-signed CA valid from now (backdated) for CAValidity.
func newCA(now time.Time) (*CA, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: generate CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "skiff-ca@" + strconv.FormatInt(now.Unix(), 10)},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: sign CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: parse new CA certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: encodeCert(der)}, keyPEM, nil
}

func loadCA(certPath, keyPath string, now time.Time) (*CA, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("tls: %s: %w", certPath, err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tls: %s: %w", keyPath, err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("tls: %s is not a CA certificate", certPath)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("tls: %s does not match %s", keyPath, certPath)
	}
	if !now.Before(cert.NotAfter) {
		return nil, fmt.Errorf("tls: %s expired at %s", certPath, cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM}, nil
}

// parseCert parses the single CERTIFICATE block of b. Trailing data other
// than whitespace is an error, so a damaged file is never half-trusted.
func parseCert(b []byte) (*x509.Certificate, error) {
	block, rest := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("unexpected data after the certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return cert, nil
}

// parseKey parses an ECDSA private key in SEC 1 ("EC PRIVATE KEY") or
// PKCS #8 ("PRIVATE KEY") PEM form.
func parseKey(b []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	switch block.Type {
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse EC private key: %w", err)
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse PKCS #8 private key: %w", err)
		}
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private key is %T; want ECDSA", k)
		}
		return ek, nil
	default:
		return nil, fmt.Errorf("PEM block is %q; want EC PRIVATE KEY", block.Type)
	}
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("tls: marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// randomSerial returns a random positive 128-bit serial number.
func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("tls: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// ClientCertValidity is how long an in-memory client certificate from
// IssueClientCert lasts; the server issues a fresh one at every start.
const ClientCertValidity = 365 * 24 * time.Hour

// IssueClientCert makes a key and a client-auth certificate for
// commonName, signed by ca, kept only in memory. The server presents it to
// agents when it proxies logs; agents trust only their cluster's CA.
func (ca *CA) IssueClientCert(commonName string, now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls: generate client key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(ClientCertValidity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("tls: sign client certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
