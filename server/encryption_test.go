package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/server/encryption"
	"github.com/skiffhq/skiff/storage"
)

// grepFiles reports which of the store's files (state.db and its WAL)
// contain any of needles, as `grep -a` would find them.
func grepFiles(t *testing.T, dir string, needles ...string) []string {
	t.Helper()
	var hits []string
	for _, name := range []string{"state.db", "state.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, "server", name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range needles {
			if bytes.Contains(b, []byte(n)) {
				hits = append(hits, name+": "+n)
			}
		}
	}
	return hits
}

// TestSecretsEncryptedAtRestRealSQLite greps the database file and its
// WAL for a secret's value, before and after a key rotation, and checks
// that a control (a ConfigMap with the same value) is found, so the grep
// itself works.
func TestSecretsEncryptedAtRestRealSQLite(t *testing.T) {
	dir := t.TempDir()
	h := startHarness(t, dir, nil)
	admin := h.adminToken()
	secret := "hunter2-" + newUID()
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	h.mustDo("POST", "/api/v1/namespaces/default/secrets", admin, fmt.Sprintf(`{"metadata":{"name":"db"},"stringData":{"password":%q}}`, secret), http.StatusCreated)
	h.mustDo("PATCH", "/api/v1/namespaces/default/secrets/db", admin, fmt.Sprintf(`{"stringData":{"again":%q}}`, secret+"-2"), http.StatusOK)
	control := "control-" + newUID()
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", admin, fmt.Sprintf(`{"metadata":{"name":"c"},"data":{"k":%q}}`, control), http.StatusCreated)

	if hits := grepFiles(t, dir, control); len(hits) == 0 {
		t.Fatal("the control value is in neither state.db nor its WAL: the grep cannot be trusted")
	}
	if hits := grepFiles(t, dir, secret, b64, base64.StdEncoding.EncodeToString([]byte(secret+"-2"))); len(hits) > 0 {
		t.Errorf("the secret's value is in the store's files while it runs: %q", hits)
	}
	if got := h.mustDo("GET", "/api/v1/namespaces/default/secrets/db", admin, "", http.StatusOK); !strings.Contains(string(got), b64) {
		t.Errorf("GET the secret = %s; want its value", got)
	}
	fi, err := os.Stat(filepath.Join(dir, "server", encryption.FileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, fi.Mode())
	}
	oldKey, _ := os.ReadFile(filepath.Join(dir, "server", encryption.FileName))
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if hits := grepFiles(t, dir, secret, b64); len(hits) > 0 {
		t.Errorf("the secret's value is in the store's files after shutdown: %q", hits)
	}

	// Rotation re-encrypts everything under a new key; the old key is gone.
	id, n, err := RotateKey(context.Background(), Config{DataDir: dir})
	if err != nil || n == 0 {
		t.Fatalf("RotateKey = %q, %d, %v; want a new key and values re-encrypted", id, n, err)
	}
	newKey, _ := os.ReadFile(filepath.Join(dir, "server", encryption.FileName))
	if bytes.Equal(oldKey, newKey) || strings.Count(string(newKey), "aesgcm ") != 1 || !strings.Contains(string(newKey), id) {
		t.Errorf("key file after rotation:\n%s\nwant one key, %s", newKey, id)
	}
	if hits := grepFiles(t, dir, secret, b64); len(hits) > 0 {
		t.Errorf("the secret's value is in the store's files after rotation: %q", hits)
	}
	h2 := startHarness(t, dir, nil)
	if got := h2.mustDo("GET", "/api/v1/namespaces/default/secrets/db", admin, "", http.StatusOK); !strings.Contains(string(got), b64) {
		t.Errorf("GET the secret after rotation = %s; want its value", got)
	}
	// Its history (watch from the start) decrypts too.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h2.info.URL+"/api/v1/namespaces/default/secrets?watch=true&resourceVersion=1", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := h2.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"name":"db"`) || !strings.Contains(line, b64) {
		t.Errorf("first event of a watch from revision 1 = %.300q, %v; want the secret, decrypted", line, err)
	}
}

// TestPlainSecretsEncryptedOnStartRealSQLite: a store written before
// encryption at rest (plain values) is sealed when the server starts.
func TestPlainSecretsEncryptedOnStartRealSQLite(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Options{Path: filepath.Join(dir, "server", "state.db"), CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	secret := "plain-" + newUID()
	s := &api.Secret{Data: map[string][]byte{"k": []byte(secret)}}
	s.Name, s.Namespace = "old", "default"
	api.SetTypeMeta(s)
	if err := st.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(secret))
	if hits := grepFiles(t, dir, b64); len(hits) == 0 {
		t.Fatal("the plain store does not hold the value: the test is broken")
	}
	h := startHarness(t, dir, nil)
	if got := h.mustDo("GET", "/api/v1/namespaces/default/secrets/old", h.adminToken(), "", http.StatusOK); !strings.Contains(string(got), b64) {
		t.Errorf("GET the old secret = %s; want its value", got)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if hits := grepFiles(t, dir, b64); len(hits) > 0 {
		t.Errorf("a secret stored in the clear before is still in the clear after a start: %q", hits)
	}
}
