package packaging

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parseUnit reads a systemd unit file into section → key → values
// (repeated keys keep every value, in order).
func parseUnit(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", path, n, line)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUnits(t *testing.T) {
	for _, u := range []struct{ name, exec, conflicts string }{
		{"skiff-server.service", "/usr/bin/skiff server", "skiff-agent.service"},
		{"skiff-agent.service", "/usr/bin/skiff agent", "skiff-server.service"},
	} {
		unit := parseUnit(t, filepath.Join("systemd", u.name))
		want := []struct{ section, key, value string }{
			{"Unit", "After", "containerd.service"},
			{"Unit", "Conflicts", u.conflicts},
			{"Service", "ExecStart", u.exec},
			{"Service", "Restart", "always"},
			{"Service", "Delegate", "yes"},
			{"Service", "KillMode", "process"},
			{"Service", "EnvironmentFile", "-/etc/default/skiff"},
			{"Service", "EnvironmentFile", "-/etc/sysconfig/skiff"},
			{"Service", "LimitNOFILE", "1048576"},
			{"Service", "TasksMax", "infinity"},
			{"Install", "WantedBy", "multi-user.target"},
		}
		for _, w := range want {
			var words []string
			for _, v := range unit[w.section][w.key] {
				words = append(words, strings.Fields(v)...)
			}
			values := unit[w.section][w.key]
			if !slices.Contains(values, w.value) && !slices.Contains(words, w.value) {
				t.Errorf("%s: [%s] %s = %q; want %q among them", u.name, w.section, w.key, values, w.value)
			}
		}
	}
}

// TestEnvironmentFile checks the file the agent's two join settings go in:
// only comments, and the SKIFF_SERVER and SKIFF_TOKEN lines the dashboard's
// "add a node" snippet tells users to write.
func TestEnvironmentFile(t *testing.T) {
	data, err := os.ReadFile("skiff.env")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"#SKIFF_SERVER=", "#SKIFF_TOKEN="} {
		if !strings.Contains(string(data), "\n"+key) {
			t.Errorf("skiff.env has no %q line", key)
		}
	}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if !strings.HasPrefix(line, "#") {
			t.Errorf("skiff.env:%d: %q sets something; the installed file must only show examples", i+1, line)
		}
	}
}
