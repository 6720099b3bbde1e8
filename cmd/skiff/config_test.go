package main

import (
	"bufio"
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// envFile reads KEY=value lines as systemd's EnvironmentFile= does (for
// the simple lines skiff's packages use).
func envFile(t *testing.T, text string) func(string) string {
	t.Helper()
	vars := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("environment file line %q has no '='", line)
		}
		vars[k] = strings.Trim(v, `"`)
	}
	return func(k string) string { return vars[k] }
}

// TestAgentFromEnvironmentFile is the dashboard's "add a node" path: the
// package's environment file gets two lines and skiff-agent.service runs
// `skiff agent` with no flags.
func TestAgentFromEnvironmentFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	// The machine's config file is shared with skiff server, whose keys the
	// agent ignores; its own keys it takes.
	writeFile(t, cfg, "listen: 0.0.0.0:7443\nserver: https://from-file:7443\nmax-pods: 20\n")
	writeFile(t, filepath.Join(cfg+".d", "10-site.yaml"), "max-pods: 30\nlabels: {zone: a}\n")
	env := envFile(t, "# skiff\nSKIFF_SERVER=https://10.0.0.1:7443\nSKIFF_TOKEN=SKF1.abc.def.ghi\n")
	tests := []struct {
		name                       string
		args                       []string
		wantServer, wantToken      string
		wantMaxPods, wantLabelsArg string
	}{
		{"environment file", nil, "https://10.0.0.1:7443", "SKF1.abc.def.ghi", "30", "zone=a"},
		{"flags win", []string{"--server", "https://flag:7443", "--max-pods", "5"}, "https://flag:7443", "SKF1.abc.def.ghi", "5", "zone=a"},
	}
	for _, tt := range tests {
		e := &cliEnv{stdout: io.Discard, stderr: io.Discard, getenv: env}
		_, f, err := parseAgentFlags(e, append([]string{"--config", cfg}, tt.args...))
		if err != nil {
			t.Fatalf("%s: parseAgentFlags = %v", tt.name, err)
		}
		if f.server != tt.wantServer || f.token != tt.wantToken || *f.values["max-pods"] != tt.wantMaxPods || *f.values["labels"] != tt.wantLabelsArg {
			t.Errorf("%s: server, token, max-pods, labels = %q, %q, %q, %q; want %q, %q, %q, %q", tt.name,
				f.server, f.token, *f.values["max-pods"], *f.values["labels"], tt.wantServer, tt.wantToken, tt.wantMaxPods, tt.wantLabelsArg)
		}
	}
	// Without the environment the file's server is used.
	_, f, err := parseAgentFlags(&cliEnv{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}, []string{"--config", cfg})
	if err != nil || f.server != "https://from-file:7443" {
		t.Errorf("parseAgentFlags(file only) = %v, server %q; want https://from-file:7443", err, f.server)
	}
}

func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, "server: https://s:7443\n")
	writeFile(t, filepath.Join(cfg+".d", "20-typo.yaml"), "evictoin-hard: memory.available<1Gi\n")
	for _, cmd := range []string{"agent", "server"} {
		code, _, errs := runCLI(cmd, "--config", cfg)
		want := filepath.Join(cfg+".d", "20-typo.yaml") + `: unknown key "evictoin-hard"`
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("skiff %s with a typo = %d, %q; want 2 and %q", cmd, code, errs, want)
		}
	}
}

// TestPackagedConfigFile checks packaging/config.yaml, the commented file
// the packages install: it names every flag of skiff server and skiff
// agent, each uncommented line parses for both commands, and where it
// claims to show the default it does.
func TestPackagedConfigFile(t *testing.T) {
	data, err := os.ReadFile("../../packaging/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^#([a-z][a-z-]*): (.*)$`)
	placeholder := regexp.MustCompile(`<[a-z -]+>`)
	var active bytes.Buffer
	keys := map[string]bool{}
	defaults := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		keys[m[1]] = true
		value, example := strings.CutSuffix(m[2], "  # (example)")
		if placeholder.MatchString(value) {
			continue // a placeholder such as <host name>
		}
		active.WriteString(m[1] + ": " + value + "\n")
		if !example {
			defaults[m[1]] = value
		}
	}
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	writeFile(t, cfg, active.String())
	none := func(string) string { return "" }
	e := &cliEnv{stdout: io.Discard, stderr: io.Discard, getenv: none}

	sf, err := parseServerFlags(e, []string{"--config", cfg})
	if err != nil {
		t.Fatalf("skiff server rejects the uncommented packaged config: %v", err)
	}
	values := map[string]string{}
	for k, v := range sf.agent {
		values[k] = *v
	}
	if _, err := agentConfig(values, "/var/lib/skiff"); err != nil {
		t.Errorf("the packaged config's agent settings are invalid: %v", err)
	}
	afs, _, err := parseAgentFlags(e, []string{"--config", cfg})
	if err != nil {
		t.Fatalf("skiff agent rejects the uncommented packaged config: %v", err)
	}
	sfs, _ := newServerFlagSet(io.Discard)
	for _, fs := range []*flag.FlagSet{sfs, afs} {
		fs.VisitAll(func(f *flag.Flag) {
			if f.Name == "config" {
				return
			}
			if !keys[f.Name] {
				t.Errorf("packaging/config.yaml does not mention --%s", f.Name)
			}
			if d, ok := defaults[f.Name]; ok && d != f.DefValue {
				t.Errorf("packaging/config.yaml shows %s: %s as the default; the flag's default is %q", f.Name, d, f.DefValue)
			}
		})
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAgentConfigPodMaxPIDs(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"", 0, false}, {"-1", 0, false}, {"1024", 1024, false},
		{"0", 0, true}, {"-2", 0, true}, {"many", 0, true},
	} {
		cfg, err := agentConfig(map[string]string{"pod-max-pids": tc.in}, "/var/lib/skiff")
		if (err != nil) != tc.wantErr || err == nil && cfg.PodMaxPIDs != tc.want {
			t.Errorf("agentConfig(--pod-max-pids %q) = %d, %v; want %d, error %v", tc.in, cfg.PodMaxPIDs, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--pod-max-pids") {
			t.Errorf("agentConfig(--pod-max-pids %q) error %q does not name the flag", tc.in, err)
		}
	}
}
