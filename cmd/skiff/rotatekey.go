package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

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
	db, err := f.dbPath()
	if err != nil {
		return err
	}
	id, n, err := server.RotateKey(ctx, server.Config{DataDir: f.dataDir, Datastore: "sqlite://" + db})
	if errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("a server is using %s: stop it first (systemctl stop skiff-server), then rotate the key", db)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "new encryption key %s in %s; re-encrypted %d stored secret values\n", id, filepath.Join(f.dataDir, "server", "encryption.key"), n)
	fmt.Fprintln(env.stdout, "back up the new key file: backups taken before today need the old one")
	return nil
}
