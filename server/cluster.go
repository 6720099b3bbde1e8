package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/skiffhq/skiff/internal/atomicfile"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/server/apiserver"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/server/tlsutil"
	"github.com/skiffhq/skiff/storage"
)

// Several servers on one PostgreSQL datastore form one cluster: the first
// to start creates the CA and the admin token, and every server adopts
// what the store holds (storage.ShareBlob) into its own data dir, so all
// present certificates from one CA and accept one admin token. On SQLite
// the store returns the server's own, and nothing changes.

// Names of the shared blobs.
const (
	blobCA         = "tls/ca"
	blobAdminToken = "admin.token"
	blobSigningKey = "serviceaccount.key"
	blobJoinToken  = "join.token"
)

// livenessSyncInterval is how often a server on PostgreSQL merges the
// heartbeats it received into the store's liveness table and reads
// the others': a few seconds, far below NodeMonitorGrace.
const livenessSyncInterval = 2 * time.Second

// caFiles is the shared CA: the PEM of ca.crt and ca.key.
type caFiles struct {
	Cert []byte `json:"crt"`
	Key  []byte `json:"key"`
}

// shareCA makes sure the server's CA is the cluster's: it creates or
// loads the local one, offers it to the store, and when the store already
// held another, replaces the local files with that one (and drops the
// serving certificate signed by the old CA).
func shareCA(ctx context.Context, st blobStore, dir string, clk clock.Clock) (*tlsutil.CA, error) {
	ca, err := tlsutil.EnsureCA(dir, clk)
	if err != nil {
		return nil, err
	}
	certPath, keyPath := filepath.Join(dir, tlsutil.CACertFile), filepath.Join(dir, tlsutil.CAKeyFile)
	local := caFiles{}
	if local.Cert, err = os.ReadFile(certPath); err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	if local.Key, err = os.ReadFile(keyPath); err != nil {
		return nil, fmt.Errorf("read CA: %w", err)
	}
	mine, err := json.Marshal(local)
	if err != nil {
		return nil, fmt.Errorf("share CA: %w", err)
	}
	shared, err := st.ShareBlob(ctx, blobCA, mine)
	if err != nil {
		return nil, fmt.Errorf("share CA: %w", err)
	}
	if bytes.Equal(shared, mine) {
		return ca, nil
	}
	var theirs caFiles
	if err := json.Unmarshal(shared, &theirs); err != nil || len(theirs.Cert) == 0 || len(theirs.Key) == 0 {
		return nil, fmt.Errorf("share CA: the datastore's CA is malformed: %v", err)
	}
	if err := atomicfile.Replace(keyPath, theirs.Key, 0o600); err != nil {
		return nil, fmt.Errorf("adopt the cluster CA: %w", err)
	}
	if err := atomicfile.Replace(certPath, theirs.Cert, 0o644); err != nil {
		return nil, fmt.Errorf("adopt the cluster CA: %w", err)
	}
	for _, f := range []string{tlsutil.ServerCertFile, tlsutil.ServerKeyFile} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("adopt the cluster CA: %w", err)
		}
	}
	return tlsutil.EnsureCA(dir, clk)
}

// shareAdminToken is shareCA for the admin token file.
func shareAdminToken(ctx context.Context, st blobStore, path string) (string, error) {
	tok, err := auth.EnsureAdminToken(path)
	if err != nil {
		return "", err
	}
	shared, err := st.ShareBlob(ctx, blobAdminToken, []byte(tok))
	if err != nil {
		return "", fmt.Errorf("share admin token: %w", err)
	}
	if string(shared) == tok {
		return tok, nil
	}
	if err := atomicfile.Replace(path, append(bytes.Clone(shared), '\n'), 0o600); err != nil {
		return "", fmt.Errorf("adopt the cluster admin token: %w", err)
	}
	return auth.EnsureAdminToken(path)
}

// shareSigningKey is shareCA for the service-account token signing key:
// every server must verify the tokens any of them issued.
func shareSigningKey(ctx context.Context, st blobStore, path string) ([]byte, error) {
	key, err := auth.EnsureSigningKey(path)
	if err != nil {
		return nil, err
	}
	shared, err := st.ShareBlob(ctx, blobSigningKey, key)
	if err != nil {
		return nil, fmt.Errorf("share service account signing key: %w", err)
	}
	if bytes.Equal(shared, key) {
		return key, nil
	}
	if err := atomicfile.Replace(path, shared, 0o600); err != nil {
		return nil, fmt.Errorf("adopt the cluster's service account signing key: %w", err)
	}
	return auth.EnsureSigningKey(path)
}

// shareJoinToken makes the default join token the cluster's: a server
// without a join.token file takes the one the store holds, if any; then
// ensure (Tokens.EnsureDefaultJoinToken) reads or makes the file and
// stores the token's hash, and the file is offered to the store. A server
// that lost a race at the very first start adopts the winner's token.
func shareJoinToken(ctx context.Context, st blobStore, path string, ensure func(context.Context, string) error) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		shared, ok, err := st.Blob(ctx, blobJoinToken)
		if err != nil {
			return fmt.Errorf("share join token: %w", err)
		}
		if ok {
			if err := atomicfile.Create(path, shared, 0o600); err != nil {
				return fmt.Errorf("adopt the cluster join token: %w", err)
			}
		}
	}
	if err := ensure(ctx, path); err != nil {
		return err
	}
	mine, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("share join token: %w", err)
	}
	shared, err := st.ShareBlob(ctx, blobJoinToken, mine)
	if err != nil {
		return fmt.Errorf("share join token: %w", err)
	}
	if bytes.Equal(shared, mine) {
		return nil
	}
	if err := atomicfile.Replace(path, shared, 0o600); err != nil {
		return fmt.Errorf("adopt the cluster join token: %w", err)
	}
	return ensure(ctx, path)
}

// syncLiveness merges this server's heartbeats into the store's liveness
// table and the other servers' into this server's, every interval, until
// ctx ends. Failures are logged and retried at the next tick: heartbeats
// keep arriving meanwhile, and a node is only marked unreachable after
// NodeMonitorGrace.
func syncLiveness(ctx context.Context, st *storage.Store, l *apiserver.Liveness, clk clock.Clock, interval time.Duration, log *slog.Logger) {
	sent := map[string]time.Time{}
	for {
		local := l.Snapshot()
		changed := make(map[string]time.Time)
		for n, t := range local {
			if t.After(sent[n]) {
				changed[n] = t
			}
		}
		all, err := st.ShareLiveness(ctx, changed)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("sharing heartbeats failed", "err", err)
		case err == nil:
			for n, t := range changed {
				sent[n] = t
			}
			for n, t := range all {
				l.Beat(n, t)
			}
		}
		if !clock.Sleep(ctx, clk, interval) {
			return
		}
	}
}

// holderID names this server process in the leader lease: host name and
// a random suffix, unique across restarts.
func holderID() string {
	host, err := os.Hostname()
	if err != nil {
		host = "skiff"
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return host + "-" + hex.EncodeToString(b[:])
}
