package server

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to read the datastore raw

	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/pgtest"
	"github.com/skiffhq/skiff/server/encryption"
)

// runMustFail runs a server that must refuse to start, and returns its
// error.
func runMustFail(t *testing.T, cfg Config) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg.Listen, cfg.Clock, cfg.DisableAgent, cfg.DisableControllers = "127.0.0.1:0", clock.Real{}, true, true
	cfg.Ready = func(Info) { t.Error("server started; want a refusal"); cancel() }
	err := Run(ctx, cfg)
	if err == nil {
		t.Fatal("Run = nil; want a refusal")
	}
	return err
}

// rawSecretValues returns every stored value of secrets (objects and
// change log) as PostgreSQL holds them.
func rawSecretValues(t *testing.T, ds string) [][]byte {
	t.Helper()
	db, err := sql.Open("pgx", ds)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT value FROM objects WHERE resource = 'secrets' UNION ALL SELECT value FROM changes WHERE resource = 'secrets'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var v []byte
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkBlobsSealed fails the test when a shared secret (the CA key, the
// admin, join and signing keys) is in the database's blobs in the clear.
func checkBlobsSealed(t *testing.T, ds, keyID string, secrets ...string) {
	t.Helper()
	db, err := sql.Open("pgx", ds)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name, value FROM blobs WHERE name <> 'encryption.check'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name string
		var v []byte
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		n++
		if bytes.Contains(v, []byte("PRIVATE KEY")) || !bytes.Contains(v[:min(len(v), 64)], []byte(keyID)) {
			t.Errorf("blob %s is not sealed with key %s: %.60q", name, keyID, v)
		}
		for _, sec := range secrets {
			if bytes.Contains(v, []byte(sec)) {
				t.Errorf("blob %s holds a secret in the clear", name)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 4 {
		t.Errorf("%d shared blobs; want the CA, the admin token, the join token and the signing key", n)
	}
}

func copyFileT(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresSecretsEncryptedWithSharedKeyFile runs servers on one
// PostgreSQL database: Secret values in the database are sealed, never
// plain; a second server given the first one's key file reads them; one
// without a key file, or with another key, refuses to start and writes
// nothing; rotate-key re-seals them, after which a server still holding
// the old key refuses and one given the new key file reads them.
func TestPostgresSecretsEncryptedWithSharedKeyFile(t *testing.T) {
	cluster := pgtest.Start(t, pgtest.Options{})
	ds := cluster.Database(t)
	configure := func(c *Config) { c.Datastore, c.Clock = ds, clock.Real{} }
	dirA, dirB := t.TempDir(), t.TempDir()
	keyA, keyB := filepath.Join(dirA, "server", encryption.FileName), filepath.Join(dirB, "server", encryption.FileName)
	a := startHarnessWith(t, dirA, nil, configure)
	token := a.adminToken()
	const plain = "hunter2-the-database-must-not-see-this"
	a.mustDo("POST", "/api/v1/namespaces/default/secrets", token,
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db"},"data":{"password":"`+base64.StdEncoding.EncodeToString([]byte(plain))+`"}}`, 201)
	checkSealed := func(keyID string) {
		t.Helper()
		vals := rawSecretValues(t, ds)
		if len(vals) == 0 {
			t.Fatal("no secret values in the database")
		}
		for _, v := range vals {
			if bytes.Contains(v, []byte(plain)) || bytes.Contains(v, []byte(base64.StdEncoding.EncodeToString([]byte(plain)))) ||
				bytes.Contains(v, []byte(`"kind":"Secret"`)) {
				t.Fatalf("a secret value is stored in the clear: %.80q", v)
			}
			if !bytes.Contains(v[:min(len(v), 64)], []byte(keyID)) {
				t.Errorf("a secret value is not sealed with key %s: %.40q", keyID, v)
			}
		}
	}
	ringA, err := encryption.Read(keyA)
	if err != nil {
		t.Fatal(err)
	}
	checkSealed(ringA.ID())
	checkBlobsSealed(t, ds, ringA.ID(), token, a.joinToken())
	readSecret := func(h *harness) {
		t.Helper()
		body := h.mustDo("GET", "/api/v1/namespaces/default/secrets/db", token, "", 200)
		if !strings.Contains(string(body), base64.StdEncoding.EncodeToString([]byte(plain))) {
			t.Fatalf("secret read through %s = %s; want the password", h.info.URL, body)
		}
	}

	// No key file: refused, and no key file is left behind.
	err = runMustFail(t, Config{DataDir: dirB, Datastore: ds})
	if !strings.Contains(err.Error(), "has no key file") || !strings.Contains(err.Error(), ringA.ID()) {
		t.Errorf("start without the key file = %v; want a refusal naming the missing key file and key %s", err, ringA.ID())
	}
	if _, err := os.Stat(keyB); err == nil {
		t.Error("a refused server wrote a key file")
	}
	// Another key: refused.
	other, err := encryption.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Create(keyB); err != nil {
		t.Fatal(err)
	}
	if err := runMustFail(t, Config{DataDir: dirB, Datastore: ds}); !strings.Contains(err.Error(), "not the datastore's") {
		t.Errorf("start with another key = %v; want a refusal: not the datastore's key", err)
	}
	// The same key file: B serves the secret.
	copyFileT(t, keyA, keyB)
	b := startHarnessWith(t, dirB, nil, configure)
	readSecret(b)

	// Rotation, with the servers stopped.
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	id, n, err := RotateKey(context.Background(), Config{DataDir: dirA, Datastore: ds})
	if err != nil || n < 2 {
		t.Fatalf("RotateKey = %s, %d, %v; want the object and its history re-sealed", id, n, err)
	}
	checkSealed(id)
	checkBlobsSealed(t, ds, id, token)
	if err := runMustFail(t, Config{DataDir: dirB, Datastore: ds}); !strings.Contains(err.Error(), "not the datastore's") {
		t.Errorf("start with the key from before the rotation = %v; want a refusal", err)
	}
	copyFileT(t, keyA, keyB)
	b = startHarnessWith(t, dirB, nil, configure)
	readSecret(b)
	a = startHarnessWith(t, dirA, nil, configure)
	readSecret(a)
	// A new server adopts the cluster's CA and admin token from the
	// sealed blobs.
	dirC := t.TempDir()
	copyFileT(t, keyA, filepath.Join(dirC, "server", encryption.FileName))
	c := startHarnessWith(t, dirC, nil, configure)
	if c.adminToken() != token || c.readFile("tls/ca.crt") != a.readFile("tls/ca.crt") {
		t.Error("a server started after the rotation did not adopt the cluster's admin token and CA")
	}
	readSecret(c)
}
