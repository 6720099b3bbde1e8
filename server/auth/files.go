package auth

import (
	"context"
	"errors"
	"fmt"
	"github.com/skiffhq/skiff/internal/atomicfile"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/api"
)

// tokenFileMode is the mode of admin.token and join.token.
const tokenFileMode fs.FileMode = 0o600

// defaultTokenDescription describes the join token EnsureDefaultJoinToken
// stores.
const defaultTokenDescription = "default join token (join.token)"

// EnsureAdminToken returns the admin token kept in path (admin.token),
// first creating the file, mode 0600, with a new SKA1.<hex> token when it
// does not exist. An existing file is never replaced: its content,
// surrounding whitespace trimmed, is the token, and content too short or
// containing spaces is an error naming path. Call it once at server start,
// before NewTokens.
func EnsureAdminToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		tok := strings.TrimSpace(string(b))
		if !validAdminToken(tok) {
			return "", fmt.Errorf("auth: %s: the admin token must be at least %d printable characters without spaces", path, minAdminTokenLen)
		}
		return tok, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("auth: %w", err)
	}
	tok, err := newAdminToken()
	if err != nil {
		return "", err
	}
	if err := createFile(path, []byte(tok+"\n"), tokenFileMode); err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	return tok, nil
}

// EnsureDefaultJoinToken returns the join token kept in path (join.token)
// and makes sure the store has it, never expiring. On first start it makes
// a new token and writes the file (mode 0600) before storing the hash, so
// a crash in between is repaired by the next call. Later it reads the file
// and stores the hash again if the token's Secret is missing (so deleting
// the default token for good needs the file removed too; the next start
// then makes a new one).
//
// It never silently replaces anything: a file it cannot parse, a token for
// another CA (wrapping ErrWrongCA), or a stored token with the same id and
// another secret is an error naming path. Call it once at server start.
func (t *Tokens) EnsureDefaultJoinToken(ctx context.Context, path string) (JoinToken, error) {
	b, err := os.ReadFile(path)
	var jt JoinToken
	switch {
	case err == nil:
		if jt, err = ParseJoinToken(string(b)); err != nil {
			return JoinToken{}, fmt.Errorf("auth: %s: %w", path, err)
		}
		if jt.CAHash != t.caHash {
			return JoinToken{}, fmt.Errorf("auth: %s: %w; remove the file to make a token for the current CA", path, ErrWrongCA)
		}
	case errors.Is(err, fs.ErrNotExist):
		if jt, err = NewJoinToken(t.caHash); err != nil {
			return JoinToken{}, err
		}
		if err := createFile(path, []byte(jt.String()+"\n"), tokenFileMode); err != nil {
			return JoinToken{}, fmt.Errorf("auth: %w", err)
		}
	default:
		return JoinToken{}, fmt.Errorf("auth: %w", err)
	}
	if err := t.ensureStored(ctx, jt, path); err != nil {
		return JoinToken{}, err
	}
	return jt, nil
}

// ensureStored stores jt's hash, never expiring, unless it is stored
// already; a stored token with jt's id and another secret is an error.
func (t *Tokens) ensureStored(ctx context.Context, jt JoinToken, path string) error {
	rec := joinTokenRecord{id: jt.ID, secretHash: HashSecret(jt.Secret), description: defaultTokenDescription, usage: usageJoin}
	err := t.store.CreateSecret(ctx, rec.secret())
	if err == nil {
		return nil
	}
	if !api.IsAlreadyExists(err) {
		return fmt.Errorf("auth: store join token from %s: %w", path, err)
	}
	s, err := t.store.GetSecret(ctx, SystemNamespace, JoinTokenSecretPrefix+jt.ID)
	if err != nil {
		return fmt.Errorf("auth: read join token for %s: %w", path, err)
	}
	r, err := decodeJoinToken(s)
	if err != nil {
		return fmt.Errorf("auth: join token for %s: %w", path, err)
	}
	if !hashMatches(r.secretHash, jt.Secret) {
		return fmt.Errorf("auth: stored join token %q does not match %s; refusing to replace either", jt.ID, path)
	}
	return nil
}

// createFile writes data to path with mode perm, creating its directory
// (mode 0700) if needed and failing if path exists. The content appears
// all at once: it goes to a synced temporary file that is hard-linked into
// place (link, unlike rename, never replaces), with an O_EXCL create as
// the fallback on filesystems without hard links.
func createFile(path string, data []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.Create(path, data, perm)
}
