package packaging

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gitRepo makes a throwaway repository holding scripts/pkg-version and one
// commit, and returns its directory and a function running git in it.
func gitRepo(t *testing.T) (string, func(args ...string)) {
	t.Helper()
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(repoRoot(t), "scripts", "pkg-version"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "pkg-version"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "scripts")
	git("commit", "-q", "-m", "first")
	return dir, git
}

func pkgVersion(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(dir, "scripts", "pkg-version")).CombinedOutput()
	if err != nil {
		t.Fatalf("pkg-version: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// validVersion is what both dpkg (an upstream version without a Debian
// revision) and rpm (no '-') accept.
var validVersion = regexp.MustCompile(`^[0-9][A-Za-z0-9.+~]*$`)

func TestPkgVersionFromGit(t *testing.T) {
	requireTools(t, "git")
	dir, git := gitRepo(t)
	if got := pkgVersion(t, dir); !regexp.MustCompile(`^0\.0\.0~git1\.g[0-9a-f]{7}$`).MatchString(got) {
		t.Errorf("pkg-version with no tags = %q; want 0.0.0~git1.g<sha>", got)
	}
	steps := []struct {
		do   func()
		want string
	}{
		{func() { git("tag", "v1.2.3") }, "1.2.3"},
		{func() {
			git("commit", "-q", "--allow-empty", "-m", "two")
			git("commit", "-q", "--allow-empty", "-m", "three")
		}, `1.2.3+git2.g<sha>`},
		{func() { git("tag", "v1.3.0-rc.1") }, "1.3.0~rc.1"},
		{func() { appendLine(t, filepath.Join(dir, "scripts", "pkg-version")) }, "1.3.0~rc.1.dirty"},
	}
	for i, s := range steps {
		s.do()
		got := pkgVersion(t, dir)
		want := regexp.QuoteMeta(s.want)
		want = strings.ReplaceAll(want, "<sha>", "[0-9a-f]{7,}")
		if !regexp.MustCompile("^" + want + "$").MatchString(got) {
			t.Errorf("step %d: pkg-version = %q; want %s", i, got, s.want)
		}
		if !validVersion.MatchString(got) {
			t.Errorf("step %d: pkg-version = %q is not valid for dpkg and rpm", i, got)
		}
	}
}

func appendLine(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n"); err != nil {
		t.Fatal(err)
	}
}

// TestPkgVersionOrder checks that the versions pkg-version makes sort as
// releases should, by dpkg's and by rpm's own comparison.
func TestPkgVersionOrder(t *testing.T) {
	requireTools(t, "dpkg", "rpm")
	ordered := []string{"0.0.0~git5.gabc1234", "0.0.0~git6.g0000000", "1.2.3~rc.1", "1.2.3", "1.2.3+git2.gabc1234", "1.2.3+git10.g0123abc", "1.2.4~rc.1", "1.10.0"}
	for i := 0; i+1 < len(ordered); i++ {
		a, b := ordered[i], ordered[i+1]
		if err := exec.Command("dpkg", "--compare-versions", a, "lt", b).Run(); err != nil {
			t.Errorf("dpkg --compare-versions %s lt %s: %v; want true", a, b, err)
		}
		out, err := exec.Command("rpm", "--eval", fmt.Sprintf("%%{lua: print(rpm.vercmp(%q, %q))}", a, b)).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "-1" {
			t.Errorf("rpm.vercmp(%s, %s) = %q, %v; want -1", a, b, out, err)
		}
	}
}
