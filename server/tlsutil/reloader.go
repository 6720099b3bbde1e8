package tlsutil

import (
	"crypto/tls"
	"sync"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

// renewRetry is how long GetCertificate waits after a renewal attempt
// before it tries again, so a full disk does not cost every handshake a
// key generation.
const renewRetry = time.Minute

// ServerCert holds a running server's serving certificate and renews it in
// place: plug GetCertificate into tls.Config. It is safe for concurrent
// use; renewals are serialized under mu. Create it with NewServerCert.
type ServerCert struct {
	dir  string
	ca   *CA
	sans SANs
	clk  clock.Clock

	mu        sync.Mutex
	cert      *tls.Certificate
	lastErr   error
	lastTried time.Time // of the last renewal attempt
}

// NewServerCert runs EnsureServerCert once and returns a holder that keeps
// the result fresh with the same arguments.
func NewServerCert(dir string, ca *CA, sans SANs, clk clock.Clock) (*ServerCert, error) {
	clk = clock.Or(clk)
	c, err := EnsureServerCert(dir, ca, sans, clk)
	if err != nil {
		return nil, err
	}
	return &ServerCert{dir: dir, ca: ca, sans: sans, clk: clk, cert: c}, nil
}

// GetCertificate returns the current certificate, first renewing it when
// it is within RenewBefore of expiry. If renewal fails while the current
// certificate is still valid, it keeps serving that one and retries at most
// once a minute (Err reports the failure); once the certificate has expired the
// failure is returned. It implements tls.Config.GetCertificate.
func (s *ServerCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dueLocked(now) {
		return s.cert, nil
	}
	// Try at most once per renewRetry while the old certificate still
	// works: after a failure, and also when even a fresh certificate is
	// due at once (the CA itself expires within RenewBefore).
	if now.Sub(s.lastTried) < renewRetry && now.Before(s.cert.Leaf.NotAfter) {
		return s.cert, nil
	}
	if err := s.renewLocked(now); err != nil && !now.Before(s.cert.Leaf.NotAfter) {
		return nil, err
	}
	return s.cert, nil
}

// Renew re-runs EnsureServerCert now, whether or not the certificate is
// due, and returns its error. A server may call it periodically to surface
// renewal problems in its log.
func (s *ServerCert) Renew() error {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewLocked(now)
}

// Err returns the error of the last failed renewal, or nil once one has
// succeeded.
func (s *ServerCert) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Certificate returns the certificate GetCertificate would serve now,
// without renewing it.
func (s *ServerCert) Certificate() *tls.Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cert
}

func (s *ServerCert) dueLocked(now time.Time) bool {
	return !now.Before(s.cert.Leaf.NotAfter.Add(-RenewBefore))
}

func (s *ServerCert) renewLocked(now time.Time) error {
	s.lastTried = now
	c, err := ensureServerCert(s.dir, s.ca, s.sans, now)
	if err != nil {
		s.lastErr = err
		return err
	}
	s.cert, s.lastErr = c, nil
	return nil
}
