package server

import (
	"context"
	"fmt"

	"github.com/skiffhq/skiff/server/encryption"
	"github.com/skiffhq/skiff/storage"
)

// RotateKey replaces the key that encrypts Secrets at rest in the
// server's data dir, offline (the server must be stopped; the store's
// lock refuses otherwise): it writes a key file with a new key in front
// of the old ones, re-encrypts every stored Secret value (live objects
// and their history) under the new key, then writes the file with the new
// key alone. A crash in between leaves a file that still holds every key
// in use, and running it again finishes the job. It returns the new key's
// id and how many values it re-encrypted.
func RotateKey(ctx context.Context, cfg Config) (string, int, error) {
	cfg = cfg.withDefaults()
	path := cfg.path(encryption.FileName)
	old, err := encryption.Load(path)
	if err != nil {
		return "", 0, err
	}
	next, err := encryption.New(old)
	if err != nil {
		return "", 0, err
	}
	if err := next.Write(path); err != nil {
		return "", 0, err
	}
	so, err := storage.ParseDatastore(cfg.Datastore)
	if err != nil {
		return "", 0, err
	}
	if so.Postgres != "" {
		return "", 0, fmt.Errorf("rotate-key: secrets are encrypted only on the SQLite datastore")
	}
	dbPath := so.Path
	st, err := storage.Open(ctx, storage.Options{Path: dbPath, Clock: cfg.Clock, Logger: cfg.Logger, Sealer: next,
		CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	if err != nil {
		return "", 0, fmt.Errorf("open datastore %s: %w", dbPath, err)
	}
	n, err := st.Reseal(ctx)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", n, fmt.Errorf("re-encrypt secrets: %w", err)
	}
	if err := next.Primary().Write(path); err != nil {
		return "", n, err
	}
	return next.ID(), n, nil
}
