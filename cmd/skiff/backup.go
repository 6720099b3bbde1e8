package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/flagconf"
	"github.com/skiffhq/skiff/storage"
)

// backupPath is the server's online-backup endpoint (server/backup.go).
const backupPath = "/api/v1/skiff/backup"

// storeFlags are the settings of `skiff server backup|restore`.
type storeFlags struct {
	dataDir, datastore string
	file               string
	key                string // restore: the backup's encryption key file
	keyFile            string // rotate-key: --encryption-key-file
}

// parseStoreFlags parses `skiff server backup|restore` flags: the data
// dir and datastore as `skiff server` takes them (flags, environment,
// config files) and fileFlag (--to or --from).
func parseStoreFlags(env *cliEnv, verb, fileFlag string, args []string) (*storeFlags, error) {
	newFS := func(out io.Writer) (*flag.FlagSet, *storeFlags, *string) {
		f := &storeFlags{}
		fs := flag.NewFlagSet("server "+verb, flag.ContinueOnError)
		fs.SetOutput(out)
		config := fs.String("config", defaultConfigFile, "config file (YAML, keys are flag names)")
		fs.StringVar(&f.dataDir, "data-dir", "/var/lib/skiff", "state directory; the store is <data-dir>/server/state.db")
		fs.StringVar(&f.datastore, "datastore", "", "datastore URL (default sqlite://<data-dir>/server/state.db)")
		if fileFlag != "" {
			fs.StringVar(&f.file, fileFlag, "", "the backup file")
		}
		if verb == "rotate-key" || verb == "backup" {
			fs.StringVar(&f.keyFile, "encryption-key-file", "", "the key file (default <data-dir>/server/encryption.key)")
		}
		if fileFlag == "from" {
			fs.StringVar(&f.key, "key", "", "the encryption key file of the backup (default FILE.key when it exists)")
		}
		return fs, f, config
	}
	pre, _, config := newFS(io.Discard)
	if err := pre.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs, _, _ := newFS(env.stdout)
			if fileFlag == "" {
				fmt.Fprintf(env.stdout, "Usage: skiff server %s [flags]\n\nFlags:\n", verb)
			} else {
				fmt.Fprintf(env.stdout, "Usage: skiff server %s --%s FILE [flags]\n\nFlags:\n", verb, fileFlag)
			}
			fs.PrintDefaults()
			return nil, errHelp
		}
		return nil, usageError{err.Error()}
	}
	explicit := false
	pre.Visit(func(fl *flag.Flag) { explicit = explicit || fl.Name == "config" })
	fs, f, _ := newFS(env.stderr)
	sfs, _ := newServerFlagSet(io.Discard)
	afs, _ := newAgentFlagSet(io.Discard)
	src := flagconf.Sources{Getenv: env.getenv, ConfigFile: *config, Explicit: explicit, OtherKeys: append(flagconf.Names(sfs), flagconf.Names(afs)...)}
	if err := flagconf.Parse(fs, args, src); err != nil {
		return nil, usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Sprintf("skiff server %s takes no arguments, got %q", verb, fs.Args())}
	}
	if f.file == "" && fileFlag != "" {
		return nil, usageError{fmt.Sprintf("skiff server %s needs --%s FILE", verb, fileFlag)}
	}
	return f, nil
}

// dbPath is the SQLite file of the datastore.
func (f *storeFlags) dbPath() (string, error) {
	if f.datastore == "" {
		return filepath.Abs(filepath.Join(f.dataDir, "server", "state.db"))
	}
	p, ok := strings.CutPrefix(f.datastore, "sqlite://")
	if !ok || p == "" {
		return "", usageError{fmt.Sprintf("--datastore %q: only sqlite://<path> is supported here (migrate to PostgreSQL with skiff server migrate)", storage.Redact(f.datastore))}
	}
	return filepath.Abs(p)
}

// runServerBackup copies the store to --to: through the running server's
// online backup when a server holds the store, else by opening it.
func runServerBackup(ctx context.Context, env *cliEnv, args []string) error {
	f, err := parseStoreFlags(env, "backup", "to", args)
	if err != nil {
		return err
	}
	if strings.HasPrefix(f.datastore, storage.PostgresScheme) || strings.HasPrefix(f.datastore, "postgresql://") {
		return backupPostgres(ctx, env, f)
	}
	db, err := f.dbPath()
	if err != nil {
		return err
	}
	if _, err := os.Stat(db); err != nil {
		return fmt.Errorf("no store to back up: %w", err)
	}
	st, err := storage.Open(ctx, storage.Options{Path: db, CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	switch {
	case errors.Is(err, storage.ErrLocked):
		if err := onlineBackup(ctx, filepath.Join(filepath.Dir(db), "skiff.yaml"), f.file); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "backed up %s from the running server to %s\n", db, f.file)
		return backupKey(env, db, f.file)
	case err != nil:
		return err
	}
	rev := st.Revision()
	err = st.Backup(ctx, f.file)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "backed up %s (revision %d) to %s\n", db, rev, f.file)
	return backupKey(env, db, f.file)
}

// keyFileName is the encryption key beside the store (server/encryption).
const keyFileName = "encryption.key"

// backupKey copies the key that encrypts the store's Secrets to
// <backup>.key, a file of its own, and says so: the backup is useless
// without it, and the two are best kept apart.
func backupKey(env *cliEnv, db, backup string) error {
	return copyKey(env, filepath.Join(filepath.Dir(db), keyFileName), backup)
}

// copyKey copies the encryption key at path to <backup>.key (0600); a
// missing key is no error (a store from before encryption at rest).
func copyKey(env *cliEnv, path, backup string) error {
	key, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a store from before encryption at rest
	}
	if err != nil {
		return fmt.Errorf("read the encryption key: %w", err)
	}
	out := backup + ".key"
	if err := os.WriteFile(out, key, 0o600); err != nil {
		return fmt.Errorf("write the encryption key: %w", err)
	}
	fmt.Fprintf(env.stdout, "the Secrets in the backup are encrypted; their key is in %s (mode 0600). Keep it apart from the backup: restore needs both (--key)\n", out)
	return nil
}

// restoreKey installs the backup's encryption key beside the store,
// keeping a different current key as encryption.key.before-restore-<t>.
func restoreKey(env *cliEnv, f *storeFlags, db string) error {
	src := f.key
	if src == "" {
		src = f.file + ".key"
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(env.stdout, "no encryption key given (--key) and no %s: if the backup holds encrypted Secrets, put its key at %s before starting the server\n", src, filepath.Join(filepath.Dir(db), keyFileName))
			return nil
		}
	}
	key, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read the backup's encryption key: %w", err)
	}
	dst := filepath.Join(filepath.Dir(db), keyFileName)
	if cur, err := os.ReadFile(dst); err == nil {
		if string(cur) == string(key) {
			return nil
		}
		kept := dst + ".before-restore-" + env.now().UTC().Format("20060102T150405Z")
		if err := os.Rename(dst, kept); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "the previous encryption key is kept as %s\n", kept)
	}
	if err := os.WriteFile(dst, key, 0o600); err != nil {
		return fmt.Errorf("install the encryption key: %w", err)
	}
	fmt.Fprintf(env.stdout, "restored the encryption key from %s into %s\n", src, dst)
	return nil
}

// backupPostgres copies a PostgreSQL store, which servers keep serving,
// into a new SQLite file (one snapshot, same revision).
func backupPostgres(ctx context.Context, env *cliEnv, f *storeFlags) error {
	opts, err := storage.ParseDatastore(f.datastore)
	if err != nil {
		return usageError{"--datastore: " + err.Error()}
	}
	opts.CompactInterval, opts.CheckpointInterval = -1, -1
	st, err := storage.Open(ctx, opts)
	if err != nil {
		return err
	}
	rev := st.Revision()
	err = st.Backup(ctx, f.file)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "backed up %s (revision %d or later) to %s\n", storage.Redact(f.datastore), rev, f.file)
	// The Secrets stay sealed with the servers' shared key.
	key := f.keyFile
	if key == "" {
		key = filepath.Join(f.dataDir, "server", keyFileName)
	}
	return copyKey(env, key, f.file)
}

// onlineBackup downloads a backup from the server that holds the store,
// as its admin (the client config the server wrote beside the store).
func onlineBackup(ctx context.Context, clientConfig, to string) (err error) {
	cfg, err := client.LoadConfig(clientConfig)
	if err != nil {
		return fmt.Errorf("a server holds the store; reach it with its admin config: %w", err)
	}
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	resp, err := c.Do(ctx, http.MethodGet, backupPath, nil)
	if err != nil {
		return fmt.Errorf("online backup from %s: %w", cfg.Server, err)
	}
	defer resp.Body.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("backup to %s: %w", to, err)
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(to)
			err = fmt.Errorf("backup to %s: %w", to, err)
		}
	}()
	n, err := io.Copy(out, resp.Body)
	if err != nil {
		return err
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("got %d of %d bytes", n, resp.ContentLength)
	}
	return out.Sync()
}

// runServerRestore replaces the store with a backup. The server must be
// stopped: the store's lock is taken for the whole swap. The backup is
// checked by opening a copy of it first; the replaced store is kept
// beside it as state.db.before-restore-<time>.
func runServerRestore(ctx context.Context, env *cliEnv, args []string) error {
	f, err := parseStoreFlags(env, "restore", "from", args)
	if err != nil {
		return err
	}
	db, err := f.dbPath()
	if err != nil {
		return err
	}
	// Holding the current store open keeps a server from starting on it
	// while it is swapped, and refuses to restore under a running one.
	var cur *storage.Store
	if _, err := os.Stat(db); err == nil {
		cur, err = storage.Open(ctx, storage.Options{Path: db, CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
		if errors.Is(err, storage.ErrLocked) {
			return fmt.Errorf("a server is using %s: stop it first (systemctl stop skiff-server), then restore", db)
		}
		if err != nil {
			return fmt.Errorf("current store: %w (move it away to restore over it)", err)
		}
	}
	tmp := db + ".restoring"
	rev, err := stageBackup(ctx, f.file, tmp)
	if err != nil {
		if cur != nil {
			cur.Close()
		}
		return err
	}
	kept := ""
	if cur != nil {
		if err := cur.Close(); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("close current store: %w", err)
		}
		kept = db + ".before-restore-" + env.now().UTC().Format("20060102T150405Z")
		if err := os.Rename(db, kept); err != nil {
			os.Remove(tmp)
			return err
		}
		for _, sfx := range []string{"-wal", "-shm"} {
			if err := os.Rename(db+sfx, kept+sfx); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	if err := os.Rename(tmp, db); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "restored %s (revision %d) into %s\n", f.file, rev, db)
	if kept != "" {
		fmt.Fprintf(env.stdout, "the previous store is kept as %s\n", kept)
	}
	return restoreKey(env, f, db)
}

// stageBackup copies the backup to tmp and opens the copy to check it is
// a sound skiff store, returning its revision. On error tmp is removed.
func stageBackup(ctx context.Context, from, tmp string) (rev int64, err error) {
	defer func() {
		if err != nil {
			os.Remove(tmp)
			err = fmt.Errorf("restore from %s: %w", from, err)
		}
		for _, sfx := range []string{".lock", "-wal", "-shm"} {
			os.Remove(tmp + sfx)
		}
	}()
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(tmp), 0o700); err != nil {
		return 0, err
	}
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return 0, err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return 0, err
	}
	if err := out.Close(); err != nil {
		return 0, err
	}
	if st, err := os.Stat(tmp); err != nil || st.Size() == 0 {
		return 0, errors.New("the backup is empty")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := storage.Open(ctx, storage.Options{Path: tmp, CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	if err != nil {
		return 0, err
	}
	rev = st.Revision()
	return rev, st.Close()
}
