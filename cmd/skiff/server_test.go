package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseServerFlagsLayers(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgFile, []byte("listen: 127.0.0.1:9000\nnode-monitor-grace: 1m\ntls-san: [a.example, 10.0.0.1]\neviction-hard: memory.available<1Gi\ndata-dir: /from/file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SKIFF_DATA_DIR": "/from/env", "SKIFF_LISTEN": "127.0.0.1:8000"}
	var out, errb bytes.Buffer
	e := &cliEnv{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: func(k string) string { return env[k] }}
	f, err := parseServerFlags(e, []string{"--config", cfgFile, "--listen", "127.0.0.1:7000", "--tls-san", "b.example,c.example", "--disable-agent"})
	if err != nil {
		t.Fatal(err)
	}
	if f.cfg.Listen != "127.0.0.1:7000" || f.cfg.DataDir != "/from/env" || f.cfg.NodeMonitorGrace != time.Minute || !f.cfg.DisableAgent {
		t.Errorf("parsed %+v; want listen from the flag, data dir from env, grace from the file", f.cfg)
	}
	if want := []string{"b.example", "c.example"}; !reflect.DeepEqual(f.cfg.TLSSANs, want) {
		t.Errorf("tls SANs = %q; want %q (the flag wins over the file)", f.cfg.TLSSANs, want)
	}
	if got := *f.agent["eviction-hard"]; got != "memory.available<1Gi" {
		t.Errorf("eviction-hard = %q; want the file's value", got)
	}
}

func TestServerUsageErrors(t *testing.T) {
	tests := []struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		{[]string{"server", "--config", "/nonexistent/skiff.yaml"}, 2, "config file"},
		{[]string{"server", "--config", "", "--log-level", "loud"}, 2, "--log-level"},
		{[]string{"server", "--config", "", "--listen", "nope"}, 2, "listen address"},
		{[]string{"server", "--config", "", "extra"}, 2, "takes no arguments"},
		{[]string{"server", "-h"}, 0, ""},
	}
	for _, tt := range tests {
		code, _, errs := runCLI(tt.args...)
		if code != tt.wantCode || !strings.Contains(errs, tt.wantErr) {
			t.Errorf("run(%q) = %d, stderr %q; want %d, stderr ~%q", tt.args, code, errs, tt.wantCode, tt.wantErr)
		}
	}
}
