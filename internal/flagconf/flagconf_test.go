package flagconf

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func newFS() (*flag.FlagSet, *string, *string, *int) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	server := fs.String("server", "default-server", "")
	labels := fs.String("labels", "", "")
	maxPods := fs.Int("max-pods", 110, "")
	return fs, server, labels, maxPods
}

func TestParsePrecedence(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("server: from-file\nmax-pods: 20\nlabels:\n  zone: a\n  arch: arm\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cfg+".d", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg+".d", "10-pods.yaml"), []byte("max-pods: 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SKIFF_SERVER": "from-env"}
	tests := []struct {
		name        string
		args        []string
		env         map[string]string
		wantServer  string
		wantMaxPods int
	}{
		{"file and drop-in", nil, nil, "from-file", 30},
		{"env beats file", nil, env, "from-env", 30},
		{"flag beats env", []string{"--server", "from-flag"}, env, "from-flag", 30},
	}
	for _, tt := range tests {
		fs, server, labels, maxPods := newFS()
		err := Parse(fs, tt.args, Sources{Getenv: func(k string) string { return tt.env[k] }, ConfigFile: cfg})
		if err != nil {
			t.Fatalf("%s: Parse() = %v", tt.name, err)
		}
		if *server != tt.wantServer || *maxPods != tt.wantMaxPods {
			t.Errorf("%s: server, max-pods = %q, %d; want %q, %d", tt.name, *server, *maxPods, tt.wantServer, tt.wantMaxPods)
		}
		if *labels != "arch=arm,zone=a" {
			t.Errorf("%s: labels = %q; want %q", tt.name, *labels, "arch=arm,zone=a")
		}
	}
}

func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("servr: x\n"), 0o600)
	badVal := filepath.Join(dir, "badval.yaml")
	os.WriteFile(badVal, []byte("max-pods: lots\n"), 0o600)
	tests := []struct {
		name string
		src  Sources
		want string
	}{
		{"unknown key", Sources{ConfigFile: bad}, `bad.yaml: unknown key "servr"`},
		{"bad value", Sources{ConfigFile: badVal}, `badval.yaml: key "max-pods"`},
		{"explicit missing", Sources{ConfigFile: filepath.Join(dir, "nope.yaml"), Explicit: true}, "no such file"},
		{"bad env", Sources{Getenv: func(k string) string {
			if k == "SKIFF_MAX_PODS" {
				return "x"
			}
			return ""
		}}, "SKIFF_MAX_PODS"},
	}
	for _, tt := range tests {
		fs, _, _, _ := newFS()
		err := Parse(fs, nil, tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse() = %v; want error containing %q", tt.name, err, tt.want)
		}
	}
	// Keys of other commands are accepted and ignored; the error for an
	// unknown key names the file it is in, also in the drop-in directory.
	shared := filepath.Join(dir, "shared.yaml")
	os.WriteFile(shared, []byte("listen: 0.0.0.0:7443\nserver: https://s:7443\n"), 0o600)
	os.MkdirAll(shared+".d", 0o700)
	os.WriteFile(filepath.Join(shared+".d", "50-typo.yaml"), []byte("max-pod: 3\n"), 0o600)
	fs, _, _, _ := newFS()
	err := Parse(fs, nil, Sources{ConfigFile: shared, OtherKeys: []string{"listen"}})
	if want := `50-typo.yaml: unknown key "max-pod"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Parse(drop-in typo) = %v; want error containing %q", err, want)
	}
	os.Remove(filepath.Join(shared+".d", "50-typo.yaml"))
	fs, server, _, _ := newFS()
	if err := Parse(fs, nil, Sources{ConfigFile: shared, OtherKeys: []string{"listen"}}); err != nil || *server != "https://s:7443" {
		t.Errorf("Parse(other command's key) = %v, server %q; want nil, https://s:7443", err, *server)
	}
	fs, _, _, _ = newFS()
	if err := Parse(fs, nil, Sources{ConfigFile: shared}); err == nil || !strings.Contains(err.Error(), `unknown key "listen"`) {
		t.Errorf("Parse(key of no command) = %v; want unknown key \"listen\"", err)
	}
	if got := Names(fs); !slices.Equal(got, []string{"labels", "max-pods", "server"}) {
		t.Errorf("Names() = %q; want [labels max-pods server]", got)
	}

	// A missing default config file is fine.
	fs, server, _, _ = newFS()
	if err := Parse(fs, nil, Sources{ConfigFile: filepath.Join(dir, "absent.yaml")}); err != nil || *server != "default-server" {
		t.Errorf("Parse(missing default) = %v, server %q; want nil, default-server", err, *server)
	}
}
