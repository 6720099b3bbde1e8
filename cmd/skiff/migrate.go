package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/skiffhq/skiff/storage"
)

// runServerMigrate copies a stopped server's store to another datastore,
// typically SQLite to PostgreSQL when one server is no longer enough:
//
//	skiff server migrate --from sqlite:///var/lib/skiff/server/state.db --to postgres://skiff@db:5432/skiff
//
// It runs offline: the source is opened exclusively (a SQLite file a
// server holds is refused), the destination must be empty. The copy is
// one snapshot in one transaction; afterwards the object and change
// counts, the revision and the compacted revision of both are compared.
func runServerMigrate(ctx context.Context, env *cliEnv, args []string) error {
	fs := flag.NewFlagSet("server migrate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	from := fs.String("from", "", "source datastore URL (sqlite://<path> or postgres://...)")
	to := fs.String("to", "", "destination datastore URL; must be empty")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(env.stdout)
			fmt.Fprintf(env.stdout, "Usage: skiff server migrate --from URL --to URL\n\nCopies a stopped server's store to an empty datastore (SQLite to PostgreSQL).\n\nFlags:\n")
			fs.PrintDefaults()
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("skiff server migrate takes no arguments, got %q", fs.Args())}
	}
	if *from == "" || *to == "" {
		return usageError{"skiff server migrate needs --from URL and --to URL"}
	}
	src, err := storage.ParseDatastore(*from)
	if err != nil {
		return usageError{"--from: " + err.Error()}
	}
	dst, err := storage.ParseDatastore(*to)
	if err != nil {
		return usageError{"--to: " + err.Error()}
	}
	if src.Path != "" {
		if _, err := os.Stat(src.Path); err != nil {
			return fmt.Errorf("no store to migrate: %w", err)
		}
	}
	for _, o := range []*storage.Options{&src, &dst} {
		o.CompactInterval, o.CheckpointInterval = -1, -1
	}
	s, err := storage.Open(ctx, src)
	if errors.Is(err, storage.ErrLocked) {
		return fmt.Errorf("%s is in use: stop the server first: %w", storage.Redact(*from), err)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := storage.Open(ctx, dst)
	if err != nil {
		return err
	}
	rep, err := d.CopyFrom(ctx, s)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("migrate to %s: %w", storage.Redact(*to), err)
	}
	fmt.Fprintf(env.stdout, "migrated %d objects and %d changes (revision %d, compacted at %d) from %s to %s; counts and revisions checked\n",
		rep.Objects, rep.Changes, rep.Revision, rep.Compacted, storage.Redact(*from), storage.Redact(*to))
	return nil
}
