package encryption

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// A key check lets servers that share a datastore agree on the key
// without the datastore holding it: the datastore keeps the sealing key's
// id and an HMAC-SHA256 of a constant under that key. A server whose key
// file lacks that key, or holds a different key of the same id, cannot
// produce the same check, and refuses to start rather than write Secrets
// the other servers cannot read.

// checkPrefix starts a key check; checkLabel is the MAC'd constant.
const (
	checkPrefix = "skcheck1"
	checkLabel  = "skiff encryption key check v1"
)

// ErrKeyMismatch means a key check names a key the ring does not hold.
var ErrKeyMismatch = errors.New("encryption: the key file does not hold the datastore's key")

// Check returns the key check of the sealing key: "skcheck1 <id> <mac>".
func (kr *Keyring) Check() []byte { return kr.keys[0].check() }

func (k key) check() []byte {
	m := hmac.New(sha256.New, k.raw)
	m.Write([]byte(checkLabel))
	return []byte(checkPrefix + " " + k.id + " " + base64.StdEncoding.EncodeToString(m.Sum(nil)))
}

// CheckKey returns the position in the ring of the key that check (from
// Check) names: 0 when it is the sealing key. It fails with
// ErrKeyMismatch, naming the check's key id, when no key of the ring
// matches, and with another error when check is malformed.
func (kr *Keyring) CheckKey(check []byte) (int, error) {
	f := strings.Fields(string(check))
	if len(f) != 3 || f[0] != checkPrefix {
		return 0, errors.New("encryption: malformed key check")
	}
	for i, k := range kr.keys {
		if k.id == f[1] && hmac.Equal(k.check(), bytes.TrimSpace(check)) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%w: the datastore's Secrets are encrypted with key %s", ErrKeyMismatch, f[1])
}

// CheckID returns the key id a key check names, or "" when malformed.
func CheckID(check []byte) string {
	f := strings.Fields(string(check))
	if len(f) != 3 || f[0] != checkPrefix {
		return ""
	}
	return f[1]
}

// Read reads the key ring at path; unlike Load it never creates one. A
// missing file is an error wrapping fs.ErrNotExist.
func Read(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("encryption: no key file at %s: %w", path, err)
		}
		return nil, fmt.Errorf("encryption: %w", err)
	}
	kr, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("encryption: %s: %w", path, err)
	}
	return kr, nil
}

// Create writes kr to a new key file at path (mode 0600, parent
// directories 0700); it fails if the file exists.
func (kr *Keyring) Create(path string) error {
	return create(path, kr)
}
