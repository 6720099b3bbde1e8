package encryption

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffhq/skiff/internal/atomicfile"
	"github.com/skiffhq/skiff/storage"
)

// FileName is the key file's name under <data-dir>/server/.
const FileName = "encryption.key"

// keyBytes is the AES-256 key size.
const keyBytes = 32

// magic starts every sealed value; a plain JSON value starts with '{'.
var magic = []byte("\x00skenc1")

// key is one named AES-GCM key.
type key struct {
	id   string
	aead cipher.AEAD
	raw  []byte
}

// Keyring is a list of keys: the first seals, all unseal. It implements
// storage.Sealer and is safe for concurrent use (it never changes once
// made).
type Keyring struct {
	keys []key
}

var _ storage.Sealer = (*Keyring)(nil)

// Load reads the key ring at path, creating it with one new key (mode
// 0600) when it does not exist.
func Load(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		kr, err := New(nil)
		if err != nil {
			return nil, err
		}
		if err := create(path, kr); err != nil {
			return nil, err
		}
		return kr, nil
	}
	if err != nil {
		return nil, fmt.Errorf("encryption: %w", err)
	}
	kr, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("encryption: %s: %w", path, err)
	}
	return kr, nil
}

func create(path string, kr *Keyring) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("encryption: %w", err)
	}
	if err := atomicfile.Create(path, kr.encode(), 0o600); err != nil {
		return fmt.Errorf("encryption: %w", err)
	}
	return nil
}

// New returns a key ring of a fresh key followed by the keys of old (nil
// for none): the ring a rotation writes first.
func New(old *Keyring) (*Keyring, error) {
	raw := make([]byte, keyBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("encryption: %w", err)
	}
	id := "k" + time.Now().UTC().Format("20060102T150405.000000000")
	id = strings.ReplaceAll(id, ".", "")
	k, err := newKey(id, raw)
	if err != nil {
		return nil, err
	}
	kr := &Keyring{keys: []key{k}}
	if old != nil {
		kr.keys = append(kr.keys, old.keys...)
	}
	return kr, nil
}

// Primary returns the ring with only its first key: what a rotation
// writes last, once everything is sealed with it.
func (kr *Keyring) Primary() *Keyring { return &Keyring{keys: kr.keys[:1]} }

// Write replaces the key file at path (mode 0600) with kr.
func (kr *Keyring) Write(path string) error {
	if _, err := atomicfile.ReplaceIfChanged(path, kr.encode(), 0o600); err != nil {
		return fmt.Errorf("encryption: %w", err)
	}
	return nil
}

// ID returns the id of the sealing key.
func (kr *Keyring) ID() string { return kr.keys[0].id }

func newKey(id string, raw []byte) (key, error) {
	if len(raw) != keyBytes || id == "" || len(id) > 255 || strings.ContainsAny(id, " \t\n") {
		return key{}, errors.New("bad key")
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, err
	}
	return key{id: id, aead: aead, raw: raw}, nil
}

const header = "# skiff: AES-256-GCM keys that encrypt Secrets in the store. The first encrypts; all decrypt.\n# Without this file the Secrets in state.db cannot be read. Back it up apart from the database.\n"

func (kr *Keyring) encode() []byte {
	var b bytes.Buffer
	b.WriteString(header)
	for _, k := range kr.keys {
		fmt.Fprintf(&b, "aesgcm %s %s\n", k.id, base64.StdEncoding.EncodeToString(k.raw))
	}
	return b.Bytes()
}

func parse(b []byte) (*Keyring, error) {
	kr := &Keyring{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "aesgcm" {
			return nil, fmt.Errorf("line %d: want \"aesgcm <id> <base64 key>\"", n)
		}
		raw, err := base64.StdEncoding.DecodeString(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		k, err := newKey(f[1], raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		kr.keys = append(kr.keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(kr.keys) == 0 {
		return nil, errors.New("no keys")
	}
	return kr, nil
}

// Seal implements storage.Sealer: magic, key id, nonce, ciphertext.
func (kr *Keyring) Seal(plain, aad []byte) ([]byte, error) {
	k := kr.keys[0]
	out := make([]byte, 0, len(magic)+1+len(k.id)+k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	out = append(out, magic...)
	out = append(out, byte(len(k.id)))
	out = append(out, k.id...)
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out = append(out, nonce...)
	return k.aead.Seal(out, nonce, plain, aad), nil
}

// split returns the key id and the rest of a sealed value.
func split(stored []byte) (id string, rest []byte, ok bool) {
	if !bytes.HasPrefix(stored, magic) || len(stored) < len(magic)+1 {
		return "", nil, false
	}
	n := int(stored[len(magic)])
	rest = stored[len(magic)+1:]
	if len(rest) < n {
		return "", nil, false
	}
	return string(rest[:n]), rest[n:], true
}

// Unseal implements storage.Sealer.
func (kr *Keyring) Unseal(stored, aad []byte) ([]byte, error) {
	id, rest, ok := split(stored)
	if !ok {
		return stored, nil // written before encryption was on
	}
	for _, k := range kr.keys {
		if k.id != id {
			continue
		}
		ns := k.aead.NonceSize()
		if len(rest) < ns {
			return nil, errors.New("sealed value too short")
		}
		return k.aead.Open(nil, rest[:ns], rest[ns:], aad)
	}
	return nil, fmt.Errorf("sealed with key %q, which is not in %s", id, FileName)
}

// Current implements storage.Sealer.
func (kr *Keyring) Current(stored []byte) bool {
	id, _, ok := split(stored)
	return ok && id == kr.keys[0].id
}
