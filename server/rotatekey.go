package server

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/server/encryption"
	"github.com/skiffhq/skiff/storage"
)

// RotateKey replaces the key that encrypts Secrets at rest, offline (the
// servers must be stopped; on SQLite the store's lock refuses
// otherwise): it writes the key file (Config.EncryptionKeyFile) with a new
// key in front of the old ones, re-encrypts every stored Secret value
// (live objects and their history) under the new key, on PostgreSQL
// records the new key's check in the datastore, then writes the file with
// the new key alone. A crash in between leaves a file that still holds
// every key in use, and running it again finishes the job. On PostgreSQL
// every server must then be given the new key file: one still holding
// the old key refuses to start. It returns the new key's id and how many
// values it re-encrypted.
func RotateKey(ctx context.Context, cfg Config) (string, int, error) {
	cfg = cfg.withDefaults()
	path := cfg.EncryptionKeyFile
	so, err := storage.ParseDatastore(cfg.Datastore)
	if err != nil {
		return "", 0, err
	}
	shared := so.Postgres != ""
	var old *encryption.Keyring
	if shared {
		// A missing key file is no reason to make one: the datastore's
		// Secrets are sealed with a key this machine lacks.
		old, err = encryption.Read(path)
	} else {
		old, err = encryption.Load(path)
	}
	if err != nil {
		return "", 0, err
	}
	next, err := encryption.New(old)
	if err != nil {
		return "", 0, err
	}
	so.Clock, so.Logger, so.Sealer = cfg.Clock, cfg.Logger, next
	so.CompactInterval, so.CheckpointInterval, so.ReserveBytes = -1, -1, -1
	st, err := storage.Open(ctx, so)
	if err != nil {
		return "", 0, fmt.Errorf("open datastore %s: %w", storage.Redact(cfg.Datastore), err)
	}
	n, err := rotate(ctx, st, old, next, path, shared)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", n, err
	}
	if err := next.Primary().Write(path); err != nil {
		return "", n, err
	}
	return next.ID(), n, nil
}

// rotate checks that old holds the datastore's key, writes next (which
// holds old's keys too) to path, re-seals and records next's check.
func rotate(ctx context.Context, st *storage.Store, old, next *encryption.Keyring, path string, shared bool) (int, error) {
	if shared {
		check, ok, err := st.Blob(ctx, blobKeyCheck)
		if err != nil {
			return 0, err
		}
		if ok {
			if _, err := old.CheckKey(check); err != nil {
				return 0, fmt.Errorf("key file %s: %w", path, err)
			}
		}
	}
	if err := next.Write(path); err != nil {
		return 0, err
	}
	n, err := st.Reseal(ctx)
	if err != nil {
		return n, fmt.Errorf("re-encrypt secrets: %w", err)
	}
	if shared {
		if _, err := resealBlobs(ctx, st, next); err != nil {
			return n, fmt.Errorf("re-encrypt the shared cluster secrets: %w", err)
		}
		if err := st.SetBlob(ctx, blobKeyCheck, next.Check()); err != nil {
			return n, fmt.Errorf("record the new key check: %w", err)
		}
	}
	return n, nil
}
