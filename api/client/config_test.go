package client

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testCA is a CA PEM for config tests; no server is involved.
func testCA(t *testing.T) []byte { return otherCAPEM(t) }

func TestWriteLoadConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server", "skiff.yaml")
	want := Config{Server: "https://127.0.0.1:7443", CAData: testCA(t), Token: testToken, Timeout: 45 * time.Second}
	if err := WriteConfig(path, want); err != nil {
		t.Fatalf("WriteConfig() = %v", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := st.Mode().Perm(); mode != 0o600 {
		t.Errorf("WriteConfig mode = %v; want 0600", mode)
	}
	got, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig() = %v", err)
	}
	if got.Server != want.Server || string(got.CAData) != string(want.CAData) || got.Token != want.Token || got.Timeout != want.Timeout {
		t.Errorf("LoadConfig(WriteConfig(%v)) = %v", want, got)
	}
	data, _ := os.ReadFile(path)
	for _, key := range []string{"server:", "certificate-authority-data:", "token:", "timeout: 45s"} {
		if !strings.Contains(string(data), key) {
			t.Errorf("config file lacks %q:\n%s", key, data)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("config dir holds %d entries; want only skiff.yaml (no temp files left)", len(entries))
	}
}

func TestWriteConfigTightensExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "skiff.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteConfig(path, Config{Server: "https://h:1", CAData: testCA(t), Token: "x"}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if mode := st.Mode().Perm(); mode != 0o600 {
		t.Errorf("mode after overwriting a 0644 file = %v; want 0600", mode)
	}
	if err := WriteConfig(path, Config{Server: "http://h:1"}); err == nil {
		t.Error("WriteConfig(invalid) = nil; want an error")
	}
}

func TestLoadConfigVariants(t *testing.T) {
	dir := t.TempDir()
	ca := testCA(t)
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(ca)
	tests := []struct {
		name, yaml string
		wantErr    string // substring; "" for success
	}{
		{"inline CA", "server: https://h:7443/\ncertificate-authority-data: " + b64 + "\ntoken: t\n", ""},
		{"relative CA file", "server: https://h:7443\ncertificate-authority: ca.crt\n", ""},
		{"absolute CA file", "server: https://h:7443\ncertificate-authority: " + filepath.Join(dir, "ca.crt") + "\n", ""},
		{"both CAs", "server: https://h:7443\ncertificate-authority: ca.crt\ncertificate-authority-data: " + b64 + "\n", "only one"},
		{"missing CA file", "server: https://h:7443\ncertificate-authority: nope.crt\n", "nope.crt"},
		{"no CA", "server: https://h:7443\n", "certificate-authority"},
		{"no server", "certificate-authority-data: " + b64 + "\n", "server is required"},
		{"plain http", "server: http://h:7443\ncertificate-authority-data: " + b64 + "\n", "https"},
		{"unknown key", "server: https://h:7443\ncertificate-authority-data: " + b64 + "\ncertificate-authorty: x\n", "certificate-authorty"},
		{"bad timeout", "server: https://h:7443\ncertificate-authority-data: " + b64 + "\ntimeout: soon\n", "timeout"},
		{"not yaml", "server: [\n", "parse"},
	}
	for _, tc := range tests {
		path := filepath.Join(dir, "cfg.yaml")
		if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: LoadConfig() = %v; want success", tc.name, err)
		case tc.wantErr == "" && (cfg.Server != "https://h:7443" || string(cfg.CAData) != string(ca)):
			t.Errorf("%s: LoadConfig() = %v; want server https://h:7443 and the CA", tc.name, cfg)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: LoadConfig() = %v; want an error mentioning %q", tc.name, err, tc.wantErr)
		}
	}
	if _, err := LoadConfig(filepath.Join(dir, "absent.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadConfig(absent) = %v; want ErrNotExist", err)
	}
}

func TestResolveConfigPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	defaults := []string{"/home/ann/.skiff/config.yaml", ServerConfigPath, DevConfigPath}
	tests := []struct {
		name   string
		flag   string
		getenv func(string) string
		home   string
		want   []string
	}{
		{"flag wins alone", "/tmp/a.yaml", env(map[string]string{EnvConfig: "/tmp/b.yaml"}), "/home/ann", []string{"/tmp/a.yaml"}},
		{"env next, alone", "", env(map[string]string{EnvConfig: "/tmp/b.yaml"}), "/home/ann", []string{"/tmp/b.yaml"}},
		{"defaults in order", "", env(nil), "/home/ann", defaults},
		{"nil getenv", "", nil, "/home/ann", defaults},
		{"no home", "", env(nil), "", []string{ServerConfigPath, DevConfigPath}},
	}
	for _, tc := range tests {
		if got := ResolveConfigPath(tc.flag, tc.getenv, tc.home); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ResolveConfigPath(%q, _, %q) = %q; want %q", tc.name, tc.flag, tc.home, got, tc.want)
		}
	}
}

func TestLoadFirstConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	other := filepath.Join(dir, "other.yaml")
	broken := filepath.Join(dir, "broken.yaml")
	for p, server := range map[string]string{good: "https://good:1", other: "https://other:1"} {
		if err := WriteConfig(p, Config{Server: server, CAData: testCA(t)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(broken, []byte("server: http://x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")

	cfg, path, err := LoadFirstConfig([]string{missing, good, other})
	if err != nil || path != good || cfg.Server != "https://good:1" {
		t.Errorf("LoadFirstConfig(missing, good, other) = %v, %q, %v; want good", cfg, path, err)
	}
	if _, _, err := LoadFirstConfig([]string{missing, broken, good}); err == nil || !strings.Contains(err.Error(), "broken.yaml") {
		t.Errorf("LoadFirstConfig(missing, broken, good) = %v; want the broken file's error", err)
	}
	if _, _, err := LoadFirstConfig([]string{missing}); !errors.Is(err, ErrNoConfig) || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadFirstConfig(missing) = %v; want ErrNoConfig naming the path", err)
	}
	if os.Geteuid() != 0 { // root reads anything
		locked := filepath.Join(dir, "locked.yaml")
		if err := WriteConfig(locked, Config{Server: "https://locked:1", CAData: testCA(t)}); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(locked, 0); err != nil {
			t.Fatal(err)
		}
		if _, path, err := LoadFirstConfig([]string{locked, good}); err != nil || path != good {
			t.Errorf("LoadFirstConfig(unreadable, good) = %q, %v; want good", path, err)
		}
		if _, _, err := LoadFirstConfig([]string{locked, missing}); !errors.Is(err, os.ErrPermission) {
			t.Errorf("LoadFirstConfig(unreadable, missing) = %v; want the permission error", err)
		}
	}
}
