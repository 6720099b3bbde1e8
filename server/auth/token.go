package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"

	"github.com/skiffhq/skiff/api/client"
)

// Prefixes of the three kinds of bearer material. The digit is a format
// version, so a future format can be told apart.
const (
	JoinTokenPrefix      = "SKF1"
	AdminTokenPrefix     = "SKA1"
	NodeCredentialPrefix = "SKN1"
)

// Shapes of join token fields.
const (
	tokenIDLen     = 6  // [a-z0-9]
	tokenSecretLen = 32 // [a-z2-7]: 20 random bytes in lowercase base32, 160 bits
	caHashLen      = 64 // lowercase hex SHA-256
	credSecretLen  = 64 // lowercase hex of 32 random bytes, 256 bits
)

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

var secretEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// JoinToken is a parsed join token, SKF1.<CAHash>.<ID>.<Secret>. ID is
// public (it names the token in `token list` and in the store); Secret is
// the part only its holder knows. String returns the whole token, secret
// included; LogValue redacts it for slog.
type JoinToken struct {
	// CAHash is the lowercase hex SHA-256 of the cluster's ca.crt.
	CAHash string
	// ID is 6 lowercase letters or digits.
	ID string
	// Secret is 32 characters of lowercase base32 (a-z, 2-7).
	Secret string
}

// NewJoinToken returns a fresh token for the CA with the given hash, with
// a random ID and Secret from crypto/rand.
func NewJoinToken(caHash string) (JoinToken, error) {
	if !isLowerHex(caHash, caHashLen) {
		return JoinToken{}, fmt.Errorf("auth: new join token: CA hash must be %d lowercase hex digits", caHashLen)
	}
	id, err := randomID()
	if err != nil {
		return JoinToken{}, err
	}
	b := make([]byte, secretEncoding.DecodedLen(tokenSecretLen))
	if _, err := rand.Read(b); err != nil {
		return JoinToken{}, fmt.Errorf("auth: new join token: %w", err)
	}
	return JoinToken{CAHash: caHash, ID: id, Secret: secretEncoding.EncodeToString(b)}, nil
}

// ParseJoinToken parses s (surrounding whitespace ignored) and checks the
// shape of every field. Errors wrap ErrInvalidToken, say which field is
// wrong and never quote s.
//
// A token may carry a server list for agents as a fifth field
// (client.SplitJoinToken); it is dropped here: the server checks only the
// four fields it issued.
func ParseJoinToken(s string) (JoinToken, error) {
	core, _, err := client.SplitJoinToken(s)
	if err != nil {
		return JoinToken{}, fmt.Errorf("%w: want %s.<ca hash>.<id>.<secret>[.<servers>]: %w", ErrInvalidToken, JoinTokenPrefix, err)
	}
	parts := strings.Split(core, ".")
	if len(parts) != 4 || parts[0] != JoinTokenPrefix {
		return JoinToken{}, fmt.Errorf("%w: want %s.<ca hash>.<id>.<secret>", ErrInvalidToken, JoinTokenPrefix)
	}
	t := JoinToken{CAHash: parts[1], ID: parts[2], Secret: parts[3]}
	switch {
	case !isLowerHex(t.CAHash, caHashLen):
		return JoinToken{}, fmt.Errorf("%w: the CA hash must be %d lowercase hex digits", ErrInvalidToken, caHashLen)
	case !validTokenID(t.ID):
		return JoinToken{}, fmt.Errorf("%w: the id must be %d lowercase letters or digits", ErrInvalidToken, tokenIDLen)
	case !validTokenSecret(t.Secret):
		return JoinToken{}, fmt.Errorf("%w: the secret must be %d characters a-z or 2-7", ErrInvalidToken, tokenSecretLen)
	}
	return t, nil
}

// String returns the token as users pass it: SKF1.<ca hash>.<id>.<secret>.
// It contains the secret: print it only to the token's owner.
func (t JoinToken) String() string {
	return JoinTokenPrefix + "." + t.CAHash + "." + t.ID + "." + t.Secret
}

// LogValue implements slog.LogValuer, logging the token without its
// secret.
func (t JoinToken) LogValue() slog.Value {
	return slog.StringValue(JoinTokenPrefix + "." + t.CAHash + "." + t.ID + ".<redacted>")
}

// HashSecret returns the lowercase hex SHA-256 of secret, the only form in
// which secrets are stored.
//
// A fast hash is enough here, and a slow KDF (bcrypt, scrypt, argon2)
// would only cost CPU on every request: those exist to make guessing
// low-entropy, human-chosen passwords expensive. Every secret hashed here
// is machine-made from crypto/rand with 160 bits (join tokens) or 256 bits
// (admin tokens, node credentials) of entropy, so even with the hash in
// hand no amount of hashing speed makes a search of that space feasible,
// and there is no dictionary to try first.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// hashMatches reports in constant time whether secret hashes to want
// (HashSecret's hex). It allocates nothing: every agent request checks
// its credential with it.
func hashMatches(want, secret string) bool {
	sum := sha256.Sum256([]byte(secret))
	var got [2 * sha256.Size]byte
	hex.Encode(got[:], sum[:])
	if len(want) != len(got) { // the length is no secret: always 64
		return false
	}
	var diff byte
	for i := range got {
		diff |= got[i] ^ want[i]
	}
	return subtle.ConstantTimeByteEq(diff, 0) == 1
}

// newAdminToken returns SKA1.<64 hex>.
func newAdminToken() (string, error) {
	s, err := randomHex()
	if err != nil {
		return "", fmt.Errorf("auth: new admin token: %w", err)
	}
	return AdminTokenPrefix + "." + s, nil
}

// newNodeCredential returns SKN1.<node>.<64 hex> and its secret part.
func newNodeCredential(node string) (cred, secret string, err error) {
	secret, err = randomHex()
	if err != nil {
		return "", "", fmt.Errorf("auth: new node credential: %w", err)
	}
	return NodeCredentialPrefix + "." + node + "." + secret, secret, nil
}

// parseNodeCredential splits SKN1.<node>.<secret>. The node name may
// itself contain dots; the secret is what follows the last one.
func parseNodeCredential(s string) (node, secret string, ok bool) {
	rest, ok := strings.CutPrefix(s, NodeCredentialPrefix+".")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return "", "", false
	}
	node, secret = rest[:i], rest[i+1:]
	if !isLowerHex(secret, credSecretLen) || validateNodeName(node) != nil {
		return "", "", false
	}
	return node, secret, true
}

func randomHex() (string, error) {
	b := make([]byte, credSecretLen/2)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// randomID returns tokenIDLen characters drawn uniformly from idAlphabet.
func randomID() (string, error) {
	// 252 is the largest multiple of 36 not above 256; rejecting bytes at
	// or above it keeps every character equally likely.
	const limit = 256 - 256%len(idAlphabet)
	out := make([]byte, 0, tokenIDLen)
	buf := make([]byte, 2*tokenIDLen)
	for len(out) < tokenIDLen {
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("auth: new token id: %w", err)
		}
		for _, c := range buf {
			if int(c) < limit && len(out) < tokenIDLen {
				out = append(out, idAlphabet[int(c)%len(idAlphabet)])
			}
		}
	}
	return string(out), nil
}

func validTokenID(s string) bool {
	if len(s) != tokenIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func validTokenSecret(s string) bool {
	if len(s) != tokenSecretLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
