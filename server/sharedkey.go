package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/skiffhq/skiff/server/encryption"
	"github.com/skiffhq/skiff/storage"
)

// Secrets at rest on a shared (PostgreSQL) datastore: every server seals
// with the same key, which it is given as a file (--encryption-key-file)
// and which never enters the datastore. The datastore keeps a key check
// (encryption.Keyring.Check: the key's id and a MAC of a constant) in the
// blob blobKeyCheck. The first server to start offers its check; every
// server compares the stored check with its key before it writes
// anything sealed, and refuses to start on a missing or different key
// with an error that says what to copy where.

// blobKeyCheck names the shared blob holding the key check.
const blobKeyCheck = "encryption.check"

// loadKeys reads the key file at path. When it is missing, on SQLite a
// new one is written (the server's own store), while on PostgreSQL a new
// key is made in memory only (fresh): shareKey writes it once the
// datastore has accepted it as the cluster's, so a server that joins an
// existing cluster without the key file leaves no stray key behind.
func loadKeys(path string, shared bool) (keys *encryption.Keyring, fresh bool, err error) {
	if !shared {
		keys, err = encryption.Load(path)
		return keys, false, err
	}
	keys, err = encryption.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		keys, err = encryption.New(nil)
		return keys, true, err
	}
	return keys, false, err
}

// shareKey makes sure keys seal as every other server of the datastore
// does: it offers keys' check to the store and compares it with the one
// stored. A fresh key (see loadKeys) the store accepted is written to
// path. On SQLite it does nothing.
func shareKey(ctx context.Context, st *storage.Store, keys *encryption.Keyring, path string, fresh bool) error {
	if st.Backend() == "sqlite" {
		return nil
	}
	check, err := st.ShareBlob(ctx, blobKeyCheck, keys.Check())
	if err != nil {
		return fmt.Errorf("share the encryption key check: %w", err)
	}
	i, err := keys.CheckKey(check)
	switch {
	case err != nil && fresh:
		return fmt.Errorf("the datastore's Secrets are encrypted with key %s, and this server has no key file at %s: "+
			"copy the key file of a server of this cluster there (or point --encryption-key-file at it)", encryption.CheckID(check), path)
	case errors.Is(err, encryption.ErrKeyMismatch):
		return fmt.Errorf("key file %s (key %s) is not the datastore's: %w; give every server the same key file", path, keys.ID(), err)
	case err != nil:
		return fmt.Errorf("encryption key check in the datastore: %w", err)
	case i != 0:
		return fmt.Errorf("key file %s encrypts with key %s, but the datastore's Secrets are encrypted with key %s: "+
			"a key rotation did not finish; run skiff server rotate-key again, then give every server the new key file", path, keys.ID(), encryption.CheckID(check))
	}
	if fresh {
		if err := keys.Create(path); err != nil {
			return fmt.Errorf("write the new encryption key: %w", err)
		}
	}
	return nil
}

// blobStore is the part of the store the cluster identity is shared
// through (cluster.go).
type blobStore interface {
	ShareBlob(ctx context.Context, name string, value []byte) ([]byte, error)
	Blob(ctx context.Context, name string) ([]byte, bool, error)
}

// sealedBlobNames are the shared blobs that are secrets: the database
// holds them sealed under the Secrets key.
var sealedBlobNames = []string{blobCA, blobAdminToken, blobSigningKey, blobJoinToken}

// sealedBlobs is the store's shared blobs with their values sealed under
// the Secrets key on the way in and unsealed on the way out, so the CA
// key and the tokens are not in the database in the clear. A blob stored
// before (plain) reads as it is; resealBlobs seals it.
type sealedBlobs struct {
	st   *storage.Store
	keys *encryption.Keyring
}

var _ blobStore = sealedBlobs{}

func blobAAD(name string) []byte { return []byte("blob/" + name) }

// ShareBlob offers value, sealed, and returns the plain stored one.
func (b sealedBlobs) ShareBlob(ctx context.Context, name string, value []byte) ([]byte, error) {
	sealed, err := b.keys.Seal(value, blobAAD(name))
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", name, err)
	}
	stored, err := b.st.ShareBlob(ctx, name, sealed)
	if err != nil {
		return nil, err
	}
	plain, err := b.keys.Unseal(stored, blobAAD(name))
	if err != nil {
		return nil, fmt.Errorf("unseal the datastore's %s: %w", name, err)
	}
	return plain, nil
}

// Blob returns the plain blob name, if the store holds one.
func (b sealedBlobs) Blob(ctx context.Context, name string) ([]byte, bool, error) {
	stored, ok, err := b.st.Blob(ctx, name)
	if err != nil || !ok {
		return nil, ok, err
	}
	plain, err := b.keys.Unseal(stored, blobAAD(name))
	if err != nil {
		return nil, false, fmt.Errorf("unseal the datastore's %s: %w", name, err)
	}
	return plain, true, nil
}

// resealBlobs seals under keys' sealing key every secret blob that is
// plain (stored before blobs were sealed) or sealed with an older key of
// the ring (a rotation). It returns how many it rewrote. On SQLite there
// are no blobs.
func resealBlobs(ctx context.Context, st *storage.Store, keys *encryption.Keyring) (int, error) {
	n := 0
	for _, name := range sealedBlobNames {
		stored, ok, err := st.Blob(ctx, name)
		if err != nil {
			return n, err
		}
		if !ok || keys.Current(stored) {
			continue
		}
		plain, err := keys.Unseal(stored, blobAAD(name))
		if err != nil {
			return n, fmt.Errorf("unseal the datastore's %s: %w", name, err)
		}
		sealed, err := keys.Seal(plain, blobAAD(name))
		if err != nil {
			return n, fmt.Errorf("seal %s: %w", name, err)
		}
		if err := st.SetBlob(ctx, name, sealed); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
