package main

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMemoryLimitFor(t *testing.T) {
	noEnv := func(string) string { return "" }
	budget := func() (int64, error) { return 4 << 30, nil }
	tests := []struct {
		v       string
		env     func(string) string
		budget  func() (int64, error)
		want    int64
		set     bool
		wantErr string
	}{
		{"auto", noEnv, budget, 3 << 30, true, ""},
		{"", noEnv, budget, 3 << 30, true, ""},
		{"auto", func(k string) string { return map[string]string{"GOMEMLIMIT": "512MiB"}[k] }, budget, 0, false, ""},
		{"auto", noEnv, func() (int64, error) { return 0, errors.New("no /proc") }, 0, false, ""},
		{"off", noEnv, budget, math.MaxInt64, true, ""},
		{"1Gi", noEnv, budget, 1 << 30, true, ""},
		{"900Mi", noEnv, budget, 900 << 20, true, ""},
		{"1073741824", noEnv, budget, 1 << 30, true, ""},
		{"10Mi", noEnv, budget, 0, false, "at least 64Mi"},
		{"lots", noEnv, budget, 0, false, "want auto, off or a size"},
	}
	for _, tt := range tests {
		got, how, set, err := memoryLimitFor(tt.v, tt.env, tt.budget)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "--memory-limit") {
				t.Errorf("%q: err %v; want one naming --memory-limit and %q", tt.v, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want || set != tt.set || how == "" {
			t.Errorf("%q: %d, %q, %v, %v; want %d, set %v", tt.v, got, how, set, err, tt.want, tt.set)
		}
	}
}

func TestMemoryBudgetFiles(t *testing.T) {
	dir := t.TempDir()
	meminfo := filepath.Join(dir, "meminfo")
	os.WriteFile(meminfo, []byte("MemFree: 1 kB\nMemTotal:       24576000 kB\n"), 0o600)
	if n, err := memTotal(meminfo); err != nil || n != 24576000<<10 {
		t.Errorf("memTotal = %d, %v", n, err)
	}
	os.WriteFile(meminfo, []byte("MemFree: 1 kB\n"), 0o600)
	if _, err := memTotal(meminfo); err == nil {
		t.Error("memTotal without MemTotal: no error")
	}
	self := filepath.Join(dir, "cgroup")
	os.WriteFile(self, []byte("0::/system.slice/skiff-server.service\n"), 0o600)
	cg := filepath.Join(dir, "fs", "system.slice", "skiff-server.service")
	os.MkdirAll(cg, 0o700)
	os.WriteFile(filepath.Join(cg, "memory.max"), []byte("1073741824\n"), 0o600)
	if n, err := cgroupMemoryMax(self, filepath.Join(dir, "fs")); err != nil || n != 1<<30 {
		t.Errorf("cgroupMemoryMax = %d, %v; want 1 GiB", n, err)
	}
	os.WriteFile(filepath.Join(cg, "memory.max"), []byte("max\n"), 0o600)
	if n, err := cgroupMemoryMax(self, filepath.Join(dir, "fs")); err != nil || n != 0 {
		t.Errorf("cgroupMemoryMax(max) = %d, %v; want 0", n, err)
	}
}

func TestServerMemoryLimitFlag(t *testing.T) {
	env := &cliEnv{stdout: &strings.Builder{}, stderr: &strings.Builder{}, getenv: func(string) string { return "" }}
	f, err := parseServerFlags(env, []string{"--config", "", "--memory-limit", "900Mi"})
	if err != nil || f.memoryLimit != "900Mi" {
		t.Fatalf("parse --memory-limit: %+v, %v", f, err)
	}
	f, err = parseServerFlags(env, []string{"--config", ""})
	if err != nil || f.memoryLimit != memoryLimitAuto {
		t.Fatalf("default --memory-limit = %q, %v; want auto", f.memoryLimit, err)
	}
	err = runServer(t.Context(), env, []string{"--config", "", "--data-dir", t.TempDir(), "--memory-limit", "lots"})
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--memory-limit") {
		t.Fatalf("runServer --memory-limit lots = %v; want a usage error naming the flag", err)
	}
}

func TestServerGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		env     string
		percent int
		set     bool
		how     string
	}{
		{"", serverGCPercent, true, "default 35"},
		{"100", 0, false, "GOGC=100"},
		{"off", 0, false, "GOGC=off"},
	} {
		getenv := func(k string) string {
			if k == "GOGC" {
				return tc.env
			}
			return ""
		}
		percent, how, set := serverGCPercentFor(getenv)
		if percent != tc.percent || set != tc.set || how != tc.how {
			t.Errorf("serverGCPercentFor(GOGC=%q) = %d, %q, %v; want %d, %q, %v", tc.env, percent, how, set, tc.percent, tc.how, tc.set)
		}
	}
}
