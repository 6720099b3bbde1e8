package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/server"
	"github.com/skiffhq/skiff/storage"
)

// runServerRotateKey is `skiff server rotate-key`: a new key for Secrets
// at rest, with every stored Secret re-encrypted under it. The server must
// be stopped.
func runServerRotateKey(ctx context.Context, env *cliEnv, args []string) error {
	f, err := parseStoreFlags(env, "rotate-key", "", args)
	if errors.Is(err, errHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	cfg := server.Config{DataDir: f.dataDir, EncryptionKeyFile: f.keyFile}
	shared := strings.HasPrefix(f.datastore, storage.PostgresScheme) || strings.HasPrefix(f.datastore, "postgresql://")
	what := storage.Redact(f.datastore)
	if shared {
		cfg.Datastore = f.datastore
	} else {
		db, err := f.dbPath()
		if err != nil {
			return err
		}
		cfg.Datastore, what = "sqlite://"+db, db
	}
	id, n, err := server.RotateKey(ctx, cfg)
	if errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("a server is using %s: stop it first (systemctl stop skiff-server), then rotate the key", what)
	}
	if err != nil {
		return err
	}
	keyFile := f.keyFile
	if keyFile == "" {
		keyFile = filepath.Join(f.dataDir, "server", "encryption.key")
	}
	fmt.Fprintf(env.stdout, "new encryption key %s in %s; re-encrypted %d stored secret values\n", id, keyFile, n)
	if shared {
		fmt.Fprintln(env.stdout, "copy the new key file to every server before starting them: a server with the old key refuses to start")
	}
	fmt.Fprintln(env.stdout, "back up the new key file: backups taken before today need the old one")
	return nil
}
