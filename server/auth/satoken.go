package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/atomicfile"
	"github.com/skiffhq/skiff/internal/clock"
)

// ServiceAccountTokenPrefix starts every service account token:
// SKS1.<base64url payload>.<base64url HMAC-SHA256 of "SKS1.<payload>">.
const ServiceAccountTokenPrefix = "SKS1"

// Service account token lifetimes (TokenRequest's expirationSeconds).
const (
	DefaultTokenExpiration = time.Hour
	MinTokenExpiration     = 10 * time.Minute
	MaxTokenExpiration     = 365 * 24 * time.Hour
)

// signingKeyBytes is the size of the HMAC key file.
const signingKeyBytes = 32

// tokenPayload is what a token carries. It is bound to one service
// account by its uid: a service account deleted and made again under the
// same name does not accept the old tokens.
type tokenPayload struct {
	Namespace string   `json:"ns"`
	Name      string   `json:"name"`
	UID       string   `json:"uid"`
	IssuedAt  int64    `json:"iat"`
	Expires   int64    `json:"exp"`
	Audiences []string `json:"aud,omitempty"`
}

// ServiceAccountGetter returns the uid of a stored service account, or an
// error satisfying api.IsNotFound.
type ServiceAccountGetter func(ctx context.Context, namespace, name string) (uid string, err error)

// ServiceAccountTokens issues and checks service account tokens. It is
// safe for concurrent use.
type ServiceAccountTokens struct {
	key []byte
	clk clock.Clock
	get ServiceAccountGetter
}

// NewServiceAccountTokens returns tokens signed with key (see
// EnsureSigningKey), checked against the service accounts get finds.
func NewServiceAccountTokens(key []byte, clk clock.Clock, get ServiceAccountGetter) (*ServiceAccountTokens, error) {
	if len(key) < signingKeyBytes {
		return nil, fmt.Errorf("auth: service account signing key has %d bytes, want %d", len(key), signingKeyBytes)
	}
	return &ServiceAccountTokens{key: key, clk: clock.Or(clk), get: get}, nil
}

// EnsureSigningKey returns the service account signing key kept in path
// (mode 0600), creating it with random bytes when missing.
func EnsureSigningKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < signingKeyBytes {
			return nil, fmt.Errorf("auth: %s: signing key too short", path)
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("auth: %w", err)
	}
	key := make([]byte, signingKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if err := atomicfile.Create(path, key, 0o600); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return key, nil
}

// Issue returns a token for the service account (namespace, name, uid),
// valid for ttl from now, and its expiry.
func (t *ServiceAccountTokens) Issue(namespace, name, uid string, ttl time.Duration, audiences []string) (string, time.Time, error) {
	now := t.clk.Now()
	exp := now.Add(ttl)
	b, err := json.Marshal(tokenPayload{Namespace: namespace, Name: name, UID: uid, IssuedAt: now.Unix(), Expires: exp.Unix(), Audiences: audiences})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("auth: encode token: %w", err)
	}
	signed := ServiceAccountTokenPrefix + "." + base64.RawURLEncoding.EncodeToString(b)
	return signed + "." + base64.RawURLEncoding.EncodeToString(t.sign(signed)), time.Unix(exp.Unix(), 0), nil
}

func (t *ServiceAccountTokens) sign(s string) []byte {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

// IsServiceAccountToken reports whether bearer looks like a service
// account token (it may still be invalid).
func IsServiceAccountToken(bearer string) bool {
	return strings.HasPrefix(bearer, ServiceAccountTokenPrefix+".")
}

// Authenticate returns the identity of a service account token: its
// signature must hold, it must not have expired, and the service account
// must still exist with the uid the token names. Anything else is
// ErrUnauthenticated; other errors mean the store failed.
func (t *ServiceAccountTokens) Authenticate(ctx context.Context, bearer string) (Identity, error) {
	i := strings.LastIndexByte(bearer, '.')
	if i < 0 || !IsServiceAccountToken(bearer) {
		return Identity{}, ErrUnauthenticated
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(bearer[i+1:])
	if err != nil || !hmac.Equal(sig, t.sign(bearer[:i])) {
		return Identity{}, ErrUnauthenticated
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(bearer[len(ServiceAccountTokenPrefix)+1 : i])
	if err != nil {
		return Identity{}, ErrUnauthenticated
	}
	var p tokenPayload
	if err := json.Unmarshal(raw, &p); err != nil || p.Namespace == "" || p.Name == "" || p.UID == "" {
		return Identity{}, ErrUnauthenticated
	}
	if !t.clk.Now().Before(time.Unix(p.Expires, 0)) {
		return Identity{}, ErrUnauthenticated
	}
	uid, err := t.get(ctx, p.Namespace, p.Name)
	if api.IsNotFound(err) {
		return Identity{}, ErrUnauthenticated
	}
	if err != nil {
		return Identity{}, fmt.Errorf("auth: authenticate service account %s/%s: %w", p.Namespace, p.Name, err)
	}
	if uid != p.UID {
		return Identity{}, ErrUnauthenticated
	}
	return Identity{
		User:   ServiceAccountUser(p.Namespace, p.Name),
		UID:    uid,
		Groups: []string{GroupServiceAccounts, GroupServiceAccounts + ":" + p.Namespace},
	}, nil
}
