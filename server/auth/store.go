package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/labels"
)

// SecretStore is what this package needs of the object store. The server
// implements it over storage; authtest.MemSecretStore is the fake.
// Implementations are safe for concurrent use, must not keep or mutate the
// Secrets passed in, and return Secrets the caller then owns.
type SecretStore interface {
	// GetSecret returns the secret, or an error satisfying api.IsNotFound
	// when there is none.
	GetSecret(ctx context.Context, namespace, name string) (*api.Secret, error)
	// CreateSecret stores a new secret, or returns an error satisfying
	// api.IsAlreadyExists when the name is taken. Concurrent creates of one
	// name must not both succeed: Join relies on it.
	CreateSecret(ctx context.Context, s *api.Secret) error
	// DeleteSecret removes the secret, or returns an error satisfying
	// api.IsNotFound when there is none.
	DeleteSecret(ctx context.Context, namespace, name string) error
	// ListSecrets returns every secret in namespace of type secretType
	// ("": of any type). A store should select by type before it
	// decrypts and decodes: the join tokens are a few Secrets among a
	// fleet's node credentials, and their sweep runs every minute.
	ListSecrets(ctx context.Context, namespace, secretType string) ([]*api.Secret, error)
}

// Where and how join tokens and node credentials are stored: as Secrets in
// SystemNamespace, like kubeadm's bootstrap tokens in kube-system. Only
// hashes are stored. The server must create SystemNamespace before
// Tokens writes to it.
const (
	SystemNamespace = "skiff-system"

	// JoinTokenSecretPrefix + <id> names a join token's Secret.
	JoinTokenSecretPrefix = "skiff-token-"
	// SecretTypeJoinToken is the Type of a join token's Secret.
	SecretTypeJoinToken = "skiff.io/join-token"

	// NodeCredentialSecretPrefix + <node name> names a node credential's
	// Secret.
	NodeCredentialSecretPrefix = "skiff-node-"
	// SecretTypeNodeCredential is the Type of a node credential's Secret.
	SecretTypeNodeCredential = "skiff.io/node-credential"
)

// Data keys of the two Secret types.
const (
	keyTokenID     = "token-id"
	keySecretHash  = "secret-hash"
	keyDescription = "description"
	keyExpiration  = "expiration" // RFC 3339; absent means never
	keyUsage       = "usage"
	keyNodeName    = "node-name"

	usageJoin = "join"
)

// maxNodeNameLen keeps skiff-node-<name> within the 253 characters of an
// object name.
const maxNodeNameLen = labels.DNS1123SubdomainMaxLength - len(NodeCredentialSecretPrefix)

// validateNodeName returns an error wrapping ErrInvalidNodeName unless name
// is a DNS-1123 subdomain of at most maxNodeNameLen characters.
func validateNodeName(name string) error {
	if len(name) > maxNodeNameLen {
		return fmt.Errorf("%w: longer than %d characters", ErrInvalidNodeName, maxNodeNameLen)
	}
	if errs := labels.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalidNodeName, name, errs[0])
	}
	return nil
}

// joinTokenRecord is the stored form of a join token.
type joinTokenRecord struct {
	id          string
	secretHash  string
	description string
	expires     time.Time // zero: never
	usage       string
	created     time.Time
}

func (r joinTokenRecord) secret() *api.Secret {
	data := map[string][]byte{
		keyTokenID:    []byte(r.id),
		keySecretHash: []byte(r.secretHash),
		keyUsage:      []byte(r.usage),
	}
	if r.description != "" {
		data[keyDescription] = []byte(r.description)
	}
	if !r.expires.IsZero() {
		data[keyExpiration] = []byte(r.expires.UTC().Format(time.RFC3339))
	}
	return &api.Secret{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: api.ObjectMeta{Namespace: SystemNamespace, Name: JoinTokenSecretPrefix + r.id},
		Type:       SecretTypeJoinToken,
		Data:       data,
	}
}

// errNotOurs marks a Secret that does not have the shape this package
// writes. It is never returned to callers unwrapped.
var errNotOurs = errors.New("not a secret this package wrote")

func decodeJoinToken(s *api.Secret) (joinTokenRecord, error) {
	where := s.Namespace + "/" + s.Name
	if s.Type != SecretTypeJoinToken {
		return joinTokenRecord{}, fmt.Errorf("secret %s has type %q, want %q: %w", where, s.Type, SecretTypeJoinToken, errNotOurs)
	}
	r := joinTokenRecord{
		id:          string(s.Data[keyTokenID]),
		secretHash:  string(s.Data[keySecretHash]),
		description: string(s.Data[keyDescription]),
		usage:       string(s.Data[keyUsage]),
		created:     s.CreationTimestamp.Time,
	}
	if JoinTokenSecretPrefix+r.id != s.Name || !validTokenID(r.id) {
		return joinTokenRecord{}, fmt.Errorf("secret %s: %s does not match its name: %w", where, keyTokenID, errNotOurs)
	}
	if !isLowerHex(r.secretHash, 64) {
		return joinTokenRecord{}, fmt.Errorf("secret %s: %s is not a SHA-256 hex digest: %w", where, keySecretHash, errNotOurs)
	}
	if v, ok := s.Data[keyExpiration]; ok {
		t, err := time.Parse(time.RFC3339, string(v))
		if err != nil {
			return joinTokenRecord{}, fmt.Errorf("secret %s: %s is not RFC 3339: %w", where, keyExpiration, errNotOurs)
		}
		r.expires = t
	}
	return r, nil
}

func nodeCredentialSecret(node, secretHash string) *api.Secret {
	return &api.Secret{
		TypeMeta:   api.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: api.ObjectMeta{Namespace: SystemNamespace, Name: NodeCredentialSecretPrefix + node},
		Type:       SecretTypeNodeCredential,
		Data: map[string][]byte{
			keyNodeName:   []byte(node),
			keySecretHash: []byte(secretHash),
		},
	}
}

// decodeNodeCredential returns the stored secret hash of node's credential.
func decodeNodeCredential(s *api.Secret, node string) (string, error) {
	where := s.Namespace + "/" + s.Name
	if s.Type != SecretTypeNodeCredential {
		return "", fmt.Errorf("secret %s has type %q, want %q: %w", where, s.Type, SecretTypeNodeCredential, errNotOurs)
	}
	if string(s.Data[keyNodeName]) != node {
		return "", fmt.Errorf("secret %s: %s does not match its name: %w", where, keyNodeName, errNotOurs)
	}
	h := string(s.Data[keySecretHash])
	if !isLowerHex(h, 64) {
		return "", fmt.Errorf("secret %s: %s is not a SHA-256 hex digest: %w", where, keySecretHash, errNotOurs)
	}
	return h, nil
}
