package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/version"
	"github.com/skiffhq/skiff/server/auth"
	"github.com/skiffhq/skiff/storage"
)

func TestRunFirstStartAndRestartRealSQLiteTLS(t *testing.T) {
	dir := t.TempDir()
	h := startHarness(t, dir, nil)

	for _, name := range []string{adminTokenName, joinTokenName, clientConfigName, kubeconfigName, "tls/ca.key", "tls/server.key", stateDBName} {
		fi, err := os.Stat(filepath.Join(dir, "server", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("mode of %s = %v; want 0600", name, got)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "server")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("server dir: %v, %v; want mode 0700", fi.Mode(), err)
	}

	// /cacerts is ca.crt byte for byte, and its hash is the join token's.
	caPEM := h.readFile("tls/ca.crt")
	cacerts := h.mustDo("GET", "/cacerts", "", "", http.StatusOK)
	if string(cacerts) != caPEM {
		t.Errorf("/cacerts differs from ca.crt")
	}
	jt, err := auth.ParseJoinToken(h.joinToken())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cacerts)
	if hex.EncodeToString(sum[:]) != jt.CAHash {
		t.Errorf("sha256(/cacerts) = %x; want the join token's %s", sum, jt.CAHash)
	}

	h.mustDo("GET", "/healthz", "", "", http.StatusOK)
	h.mustDo("GET", "/readyz", "", "", http.StatusOK)
	var v version.Info
	if err := json.Unmarshal(h.mustDo("GET", "/version", "", "", http.StatusOK), &v); err != nil || v != version.Get() {
		t.Errorf("/version = %+v, %v; want %+v", v, err, version.Get())
	}

	// The client configs point at this server with the admin token.
	cc, err := client.LoadConfig(h.info.ClientConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Server != h.info.URL || cc.Token != h.adminToken() || string(cc.CAData) != caPEM {
		t.Errorf("skiff.yaml = %v; want server %s, the admin token and ca.crt", cc, h.info.URL)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal([]byte(h.readFile(kubeconfigName)), &kc); err != nil {
		t.Fatal(err)
	}
	if kc.CurrentContext != "skiff" || len(kc.Clusters) != 1 || kc.Clusters[0].Cluster.Server != h.info.URL ||
		string(kc.Clusters[0].Cluster.CertificateAuthorityData) != caPEM || kc.Users[0].User.Token != h.adminToken() ||
		kc.Contexts[0].Context.Cluster != "skiff" || kc.Contexts[0].Context.User != kc.Users[0].Name {
		t.Errorf("kubeconfig.yaml is not a kubeconfig for this server: %+v", kc)
	}

	admin, join := h.adminToken(), h.joinToken()
	if err := h.stop(); err != nil {
		t.Fatalf("Run after cancel = %v; want nil", err)
	}
	// The store is closed: the file can be opened again (it is locked
	// while open).
	st, err := storage.Open(context.Background(), storage.Options{Path: filepath.Join(dir, "server", stateDBName)})
	if err != nil {
		t.Fatalf("reopen state.db after shutdown: %v", err)
	}
	st.Close()

	// A second start reuses the CA and the tokens.
	h2 := startHarness(t, dir, nil)
	if h2.readFile("tls/ca.crt") != caPEM {
		t.Error("second start made a new CA")
	}
	if h2.adminToken() != admin || h2.joinToken() != join {
		t.Error("second start made new tokens")
	}
	h2.mustDo("GET", "/api/v1/namespaces/default", admin, "", http.StatusOK)
	if code, cred := h2.join(join, "a", ""); code != http.StatusOK || cred == "" {
		t.Errorf("join with the reused join.token = %d; want 200", code)
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"listen", Config{Listen: "nope"}},
		{"datastore", Config{Datastore: "postgres://x"}},
		{"cidr", Config{ClusterCIDR: "10.0.0.0/30"}},
		{"negative", Config{NodeMonitorGrace: -1}},
		{"event ttl", Config{EventTTL: 30 * time.Second}},
	}
	for _, tt := range tests {
		if err := tt.cfg.Validate(); err == nil {
			t.Errorf("Config{%s}.Validate() = nil; want an error", tt.name)
		}
		if err := Run(context.Background(), tt.cfg); err == nil {
			t.Errorf("Run(Config{%s}) = nil; want an error", tt.name)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Config{}.Validate() = %v; want nil", err)
	}
}

func TestEventTTLDefaultAndKept(t *testing.T) {
	if got := (Config{}).withDefaults().EventTTL; got != time.Hour {
		t.Errorf("default EventTTL = %v; want 1h (kube-apiserver's --event-ttl)", got)
	}
	if got := (Config{EventTTL: 10 * time.Minute}).withDefaults().EventTTL; got != 10*time.Minute {
		t.Errorf("EventTTL 10m became %v", got)
	}
}
